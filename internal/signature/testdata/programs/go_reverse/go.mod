module example.com/reverse

go 1.26
