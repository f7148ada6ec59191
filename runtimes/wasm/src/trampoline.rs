//! Calling wasmtime-wasi's own preview-1 functions from the functions that shadow them.
//!
//! wasmtime-wasi's functions find the guest's memory through their *caller's* `memory`
//! export, which a host-to-host call does not have. So the shadowing functions (see
//! [`crate::sleep`] and [`crate::fs`]) reach the originals through a small trampoline
//! module, instantiated in the run's store on first use: it imports the originals and
//! the guest's memory, and exports both.

use std::sync::Arc;

use wasmtime::{Caller, Engine, Extern, Instance, Linker, Module, WasmParams, WasmResults};

use crate::{RunState, WASI_MODULE};

/// The functions the trampoline passes on, with their preview-1 signatures.
const FUNCTIONS: &[(&str, &str)] = &[
    ("poll_oneoff", "(param i32 i32 i32 i32) (result i32)"),
    ("fd_write", "(param i32 i32 i32 i32) (result i32)"),
    ("fd_pwrite", "(param i32 i32 i32 i64 i32) (result i32)"),
    ("fd_filestat_set_size", "(param i32 i64) (result i32)"),
    ("path_open", "(param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)"),
    ("path_create_directory", "(param i32 i32 i32) (result i32)"),
    ("path_symlink", "(param i32 i32 i32 i32 i32) (result i32)"),
    ("path_link", "(param i32 i32 i32 i32 i32 i32 i32) (result i32)"),
    ("fd_renumber", "(param i32 i32) (result i32)"),
    ("fd_close", "(param i32) (result i32)"),
];

/// The originals (a copy of the linker before any shadowing) and the trampoline module.
pub(crate) struct Originals {
    linker: Linker<RunState>,
    module: Module,
}

impl Originals {
    /// Takes the originals from `linker`, which must hold wasmtime-wasi's functions and
    /// nothing shadowed yet.
    pub(crate) fn new(engine: &Engine, linker: &Linker<RunState>) -> wasmtime::Result<Arc<Self>> {
        let mut wat = String::from("(module\n");
        for (i, (name, sig)) in FUNCTIONS.iter().enumerate() {
            wat.push_str(&format!("  (import \"{WASI_MODULE}\" \"{name}\" (func $f{i} {sig}))\n"));
        }
        wat.push_str("  (import \"guest\" \"memory\" (memory 0))\n  (export \"memory\" (memory 0))\n");
        // Wasm functions that call the imports: a host function called by the host directly
        // would have no caller whose memory it could use.
        for (i, (name, sig)) in FUNCTIONS.iter().enumerate() {
            let params = sig.split(")").next().unwrap_or("").split_whitespace().skip(1).count();
            let args: String = (0..params).map(|p| format!(" (local.get {p})")).collect();
            wat.push_str(&format!("  (func (export \"{name}\") {sig} (call $f{i}{args}))\n"));
        }
        wat.push(')');
        let module = Module::new(engine, wat::parse_str(&wat)?)?;
        Ok(Arc::new(Originals { linker: linker.clone(), module }))
    }
}

/// Calls wasmtime-wasi's own `name` with the caller's memory.
pub(crate) fn call<P: WasmParams, R: WasmResults>(
    caller: &mut Caller<'_, RunState>,
    name: &str,
    params: P,
) -> wasmtime::Result<R> {
    let instance = match caller.data().trampoline {
        Some(instance) => instance,
        None => {
            let Some(Extern::Memory(memory)) = caller.get_export("memory") else {
                wasmtime::bail!("{name}: the guest exports no memory");
            };
            let originals = caller.data().originals.clone();
            let mut imports = Vec::with_capacity(FUNCTIONS.len() + 1);
            for (f, _) in FUNCTIONS {
                imports.push(originals.linker.get(&mut *caller, WASI_MODULE, f).expect("wasmtime-wasi has it"));
            }
            imports.push(memory.into());
            let instance = Instance::new(&mut *caller, &originals.module, &imports)?;
            caller.data_mut().trampoline = Some(instance);
            instance
        }
    };
    instance.get_typed_func::<P, R>(&mut *caller, name)?.call(&mut *caller, params)
}
