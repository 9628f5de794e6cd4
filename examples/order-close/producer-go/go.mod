module github.com/madeira-dev/madeira/examples/order-close/producer-go

go 1.21

require github.com/madeira-dev/madeira/sdk/go v0.0.0

replace github.com/madeira-dev/madeira/sdk/go => ../../../sdk/go
