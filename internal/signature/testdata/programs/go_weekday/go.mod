module example.com/weekday

go 1.26
