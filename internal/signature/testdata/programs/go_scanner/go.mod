module example.com/scanner

go 1.26
