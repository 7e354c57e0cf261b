module example.com/spinwait

go 1.26
