// Guests the host's tests and benchmarks build (testdata: invisible to ./... in the host module).
module kwokbench.local/plugins/wasm/testdata/guests

go 1.24.0

require kwokbench.local/plugins/wasm/guest v0.0.0

replace kwokbench.local/plugins/wasm/guest => ../../guest
