module example.com/portnum

go 1.26
