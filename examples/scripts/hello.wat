;; A WASI preview-1 command: prints a greeting and, as its last line, the run's output (JSON).
;; Upload it as text: {"runtime": "wasm", "source": "<this file>"} (or compile it to a .wasm
;; binary and send that base64-encoded in `source_base64`).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hello from a wasm job\0a{\"greeted\": true}\0a")
  (func (export "_start")
    ;; one iovec at 0: (pointer 16, length 40), bytes written at 8
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 40))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
