module example.com/summer

go 1.26
