module github.com/directord/directord

go 1.26.0
