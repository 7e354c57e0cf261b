module example.com/swapper

go 1.26
