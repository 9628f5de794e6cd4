module madeira.dev/bench/peers/limits

go 1.24.0
