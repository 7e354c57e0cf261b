module example.com/board

go 1.26
