module example.com/tenants

go 1.26
