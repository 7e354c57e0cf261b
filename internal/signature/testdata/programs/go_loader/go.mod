module example.com/loader

go 1.26
