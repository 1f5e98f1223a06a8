"""The language server (`tapelint lsp`). Needs the `lsp` extra (pygls); the
rest of tapelint never imports this package."""
