module example.com/logline

go 1.26
