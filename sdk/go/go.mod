module github.com/madeira-dev/madeira/sdk/go

go 1.21
