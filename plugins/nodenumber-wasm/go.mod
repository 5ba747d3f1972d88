module kwokbench.local/plugins/nodenumber-wasm

go 1.24.0

require kwokbench.local/plugins/wasm/guest v0.0.0

replace kwokbench.local/plugins/wasm/guest => ../wasm/guest
