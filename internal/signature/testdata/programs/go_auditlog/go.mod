module example.com/auditlog

go 1.26
