module example.com/finder

go 1.26
