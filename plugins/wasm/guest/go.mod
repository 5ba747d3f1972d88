module kwokbench.local/plugins/wasm/guest

// Guests need Go >= 1.24 (//go:wasmexport and -buildmode=c-shared for wasip1).
go 1.24.0
