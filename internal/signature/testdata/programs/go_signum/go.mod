module example.com/signum

go 1.26
