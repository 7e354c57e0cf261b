module example.com/ids

go 1.26
