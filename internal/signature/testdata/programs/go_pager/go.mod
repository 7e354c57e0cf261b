module example.com/pager

go 1.26
