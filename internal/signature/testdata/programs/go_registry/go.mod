module example.com/registry

go 1.26
