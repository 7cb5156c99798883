// C side of the binding: trampolines for wasmtime callbacks and small helpers
// that save cgo crossings on the hot path.

#include "capi.h"
#include "_cgo_export.h"

wasmtime_error_t *th_func_callback(void *data, wasmtime_context_t *ctx,
                                   const wasmtime_component_func_type_t *ty,
                                   wasmtime_component_val_t *args, size_t nargs,
                                   wasmtime_component_val_t *results, size_t nresults) {
  (void)ty;
  return goHostFuncCall((uintptr_t)data, (uintptr_t)wasmtime_context_get_data(ctx), ctx, args,
                        nargs, results, nresults);
}

wasmtime_error_t *th_resource_dtor(void *data, wasmtime_context_t *ctx, uint32_t rep) {
  return goResourceDtor((uintptr_t)data, (uintptr_t)wasmtime_context_get_data(ctx), ctx, rep);
}

ptrdiff_t th_write_callback(void *data, const unsigned char *buf, size_t len) {
  return goWrite((uintptr_t)data, (void *)buf, len);
}

void th_handle_finalizer(void *data) { goHandleDelete((uintptr_t)data); }

wasmtime_component_val_t *th_val_box(void) {
  wasmtime_component_val_t v;
  v.kind = WASMTIME_COMPONENT_BOOL;
  v.of.u64 = 0;
  v.of.string.data = 0;
  return wasmtime_component_val_new(&v);
}

wasmtime_error_t *th_func_call(const wasmtime_component_func_t *func, wasmtime_context_t *ctx,
                               const wasmtime_component_val_t *args, size_t nargs,
                               wasmtime_component_val_t *results, size_t nresults,
                               int *post_return_failed) {
  wasmtime_error_t *err = wasmtime_component_func_call(func, ctx, args, nargs, results, nresults);
  if (err != NULL) {
    return err;
  }
  err = wasmtime_component_func_post_return(func, ctx);
  if (err != NULL) {
    *post_return_failed = 1;
  }
  return err;
}

bool th_set_argv(wasi_config_t *config, size_t argc, char **argv) {
  return wasi_config_set_argv(config, argc, (const char **)argv);
}

wasmtime_store_t *th_store_new(wasm_engine_t *engine, uintptr_t handle) {
  return wasmtime_store_new(engine, (void *)handle, th_handle_finalizer);
}

void th_set_output(wasi_config_t *config, bool is_stdout, uintptr_t handle) {
  if (is_stdout) {
    wasi_config_set_stdout_custom(config, th_write_callback, (void *)handle, th_handle_finalizer);
  } else {
    wasi_config_set_stderr_custom(config, th_write_callback, (void *)handle, th_handle_finalizer);
  }
}

wasmtime_error_t *th_add_func(wasmtime_component_linker_instance_t *li, const char *name,
                              size_t name_len, uintptr_t handle) {
  return wasmtime_component_linker_instance_add_func(li, name, name_len, th_func_callback,
                                                     (void *)handle, th_handle_finalizer);
}

wasmtime_error_t *th_add_resource(wasmtime_component_linker_instance_t *li, const char *name,
                                  size_t name_len, uint32_t ty, uintptr_t handle) {
  wasmtime_component_resource_type_t *rt = wasmtime_component_resource_type_new_host(ty);
  wasmtime_error_t *err = wasmtime_component_linker_instance_add_resource(
      li, name, name_len, rt, th_resource_dtor, (void *)handle, th_handle_finalizer);
  wasmtime_component_resource_type_delete(rt);
  return err;
}

static wasmtime_error_t *th_raw_echo_cb(void *data, wasmtime_context_t *ctx,
                                        const wasmtime_component_func_type_t *ty,
                                        wasmtime_component_val_t *args, size_t nargs,
                                        wasmtime_component_val_t *results, size_t nresults) {
  (void)ctx;
  (void)ty;
  (void)nargs;
  (void)nresults;
  goRawEcho((uintptr_t)data, args, results);
  return NULL;
}

wasmtime_error_t *th_raw_add_echo(wasmtime_component_linker_instance_t *li, const char *name,
                                  size_t name_len, uintptr_t mode) {
  return wasmtime_component_linker_instance_add_func(li, name, name_len, th_raw_echo_cb,
                                                     (void *)mode, NULL);
}
