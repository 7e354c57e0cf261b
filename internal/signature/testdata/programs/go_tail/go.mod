module example.com/tail

go 1.26
