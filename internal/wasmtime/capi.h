// capi.h declares the subset of the wasmtime 39 C API (wasm.h, wasi.h,
// wasmtime/*.h, wasmtime/component/*.h) that this package uses. cgo cannot
// point CFLAGS at another module's directory, so the declarations are copied
// here; the layout of every type and the value of every constant are checked
// against the real headers by TestHeaderLayout (layout.go + layout_test.go).
//
// Declarations only: this file is included by files with //export functions.
//
// Type definitions and constants are guarded by TH_REAL_HEADERS so that the
// header test can include this file after the real headers: the compiler
// then checks every function prototype here against wasmtime's.

#ifndef TOOLHOST_WASMTIME_CAPI_H
#define TOOLHOST_WASMTIME_CAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef TH_REAL_HEADERS
// ---- wasm.h -----------------------------------------------------------------

typedef char byte_t;
typedef float float32_t;
typedef double float64_t;
typedef byte_t wasm_byte_t;

typedef struct wasm_byte_vec_t {
  size_t size;
  wasm_byte_t *data;
} wasm_byte_vec_t;
typedef wasm_byte_vec_t wasm_name_t;
#endif

void wasm_byte_vec_new_empty(wasm_byte_vec_t *out);
void wasm_byte_vec_new_uninitialized(wasm_byte_vec_t *out, size_t);
void wasm_byte_vec_new(wasm_byte_vec_t *out, size_t, const wasm_byte_t[]);
void wasm_byte_vec_delete(wasm_byte_vec_t *);
#ifndef TH_REAL_HEADERS

typedef struct wasm_config_t wasm_config_t;
typedef struct wasm_engine_t wasm_engine_t;
typedef struct wasm_frame_t wasm_frame_t;
typedef struct wasm_functype_t wasm_functype_t;

typedef struct wasm_frame_vec_t {
  size_t size;
  wasm_frame_t **data;
} wasm_frame_vec_t;
#endif
void wasm_frame_vec_delete(wasm_frame_vec_t *);

wasm_config_t *wasm_config_new(void);
void wasm_config_delete(wasm_config_t *);
wasm_engine_t *wasm_engine_new_with_config(wasm_config_t *);
void wasm_engine_delete(wasm_engine_t *);

uint32_t wasm_frame_func_index(const wasm_frame_t *);
size_t wasm_frame_func_offset(const wasm_frame_t *);
size_t wasm_frame_module_offset(const wasm_frame_t *);
#ifndef TH_REAL_HEADERS

// ---- wasmtime/error.h, trap.h ----------------------------------------------

typedef struct wasmtime_error wasmtime_error_t;
#endif
wasmtime_error_t *wasmtime_error_new(const char *);
void wasmtime_error_delete(wasmtime_error_t *error);
void wasmtime_error_message(const wasmtime_error_t *error, wasm_name_t *message);
bool wasmtime_error_exit_status(const wasmtime_error_t *, int *status);
void wasmtime_error_wasm_trace(const wasmtime_error_t *, wasm_frame_vec_t *out);

const wasm_name_t *wasmtime_frame_func_name(const wasm_frame_t *);
const wasm_name_t *wasmtime_frame_module_name(const wasm_frame_t *);
#ifndef TH_REAL_HEADERS

typedef uint8_t wasmtime_trap_code_t;
enum wasmtime_trap_code_enum {
  WASMTIME_TRAP_CODE_STACK_OVERFLOW,
  WASMTIME_TRAP_CODE_MEMORY_OUT_OF_BOUNDS,
  WASMTIME_TRAP_CODE_HEAP_MISALIGNED,
  WASMTIME_TRAP_CODE_TABLE_OUT_OF_BOUNDS,
  WASMTIME_TRAP_CODE_INDIRECT_CALL_TO_NULL,
  WASMTIME_TRAP_CODE_BAD_SIGNATURE,
  WASMTIME_TRAP_CODE_INTEGER_OVERFLOW,
  WASMTIME_TRAP_CODE_INTEGER_DIVISION_BY_ZERO,
  WASMTIME_TRAP_CODE_BAD_CONVERSION_TO_INTEGER,
  WASMTIME_TRAP_CODE_UNREACHABLE_CODE_REACHED,
  WASMTIME_TRAP_CODE_INTERRUPT,
  WASMTIME_TRAP_CODE_ALWAYS_TRAP_ADAPTER,
  WASMTIME_TRAP_CODE_OUT_OF_FUEL,
  WASMTIME_TRAP_CODE_ATOMIC_WAIT_NON_SHARED_MEMORY,
  WASMTIME_TRAP_CODE_NULL_REFERENCE,
  WASMTIME_TRAP_CODE_ARRAY_OUT_OF_BOUNDS,
  WASMTIME_TRAP_CODE_ALLOCATION_TOO_LARGE,
  WASMTIME_TRAP_CODE_CAST_FAILURE,
  WASMTIME_TRAP_CODE_CANNOT_ENTER_COMPONENT,
  WASMTIME_TRAP_CODE_NO_ASYNC_RESULT,
  WASMTIME_TRAP_CODE_DISABLED_OPCODE,
};

// ---- wasmtime/config.h, engine.h --------------------------------------------

typedef uint8_t wasmtime_opt_level_t;
enum wasmtime_opt_level_enum {
  WASMTIME_OPT_LEVEL_NONE,
  WASMTIME_OPT_LEVEL_SPEED,
  WASMTIME_OPT_LEVEL_SPEED_AND_SIZE,
};
#endif

void wasmtime_config_consume_fuel_set(wasm_config_t *, bool);
void wasmtime_config_epoch_interruption_set(wasm_config_t *, bool);
void wasmtime_config_parallel_compilation_set(wasm_config_t *, bool);
void wasmtime_config_cranelift_opt_level_set(wasm_config_t *, wasmtime_opt_level_t);
void wasmtime_config_wasm_component_model_set(wasm_config_t *, bool);

void wasmtime_engine_increment_epoch(wasm_engine_t *engine);

#ifndef TH_REAL_HEADERS
typedef struct wasmtime_pooling_allocation_config_t wasmtime_pooling_allocation_config_t;
#endif
wasmtime_pooling_allocation_config_t *wasmtime_pooling_allocation_config_new(void);
void wasmtime_pooling_allocation_config_delete(wasmtime_pooling_allocation_config_t *);
void wasmtime_pooling_allocation_config_total_component_instances_set(wasmtime_pooling_allocation_config_t *, uint32_t);
void wasmtime_pooling_allocation_config_total_core_instances_set(wasmtime_pooling_allocation_config_t *, uint32_t);
void wasmtime_pooling_allocation_config_total_memories_set(wasmtime_pooling_allocation_config_t *, uint32_t);
void wasmtime_pooling_allocation_config_total_tables_set(wasmtime_pooling_allocation_config_t *, uint32_t);
void wasmtime_pooling_allocation_config_max_memory_size_set(wasmtime_pooling_allocation_config_t *, size_t);
void wasmtime_pooling_allocation_strategy_set(wasm_config_t *, const wasmtime_pooling_allocation_config_t *);
#ifndef TH_REAL_HEADERS

// ---- wasi.h -------------------------------------------------------------------

typedef struct wasi_config_t wasi_config_t;
#endif
void wasi_config_delete(wasi_config_t *);
wasi_config_t *wasi_config_new(void);
bool wasi_config_set_argv(wasi_config_t *config, size_t argc, const char *argv[]);
bool wasi_config_set_env(wasi_config_t *config, size_t envc, const char *names[],
                         const char *values[]);
void wasi_config_set_stdout_custom(wasi_config_t *config,
                                   ptrdiff_t (*callback)(void *, const unsigned char *, size_t),
                                   void *data, void (*finalizer)(void *));
void wasi_config_set_stderr_custom(wasi_config_t *config,
                                   ptrdiff_t (*callback)(void *, const unsigned char *, size_t),
                                   void *data, void (*finalizer)(void *));
#ifndef TH_REAL_HEADERS
typedef size_t wasi_dir_perms;
typedef size_t wasi_file_perms;
enum wasi_dir_perms_flags {
  WASMTIME_WASI_DIR_PERMS_READ = 1,
  WASMTIME_WASI_DIR_PERMS_WRITE = 2,
};
enum wasi_file_perms_flags {
  WASMTIME_WASI_FILE_PERMS_READ = 1,
  WASMTIME_WASI_FILE_PERMS_WRITE = 2,
};
#endif
bool wasi_config_preopen_dir(wasi_config_t *config, const char *host_path,
                             const char *guest_path, wasi_dir_perms dir_perms,
                             wasi_file_perms file_perms);
#ifndef TH_REAL_HEADERS

// ---- wasmtime/store.h -------------------------------------------------------

typedef struct wasmtime_store wasmtime_store_t;
typedef struct wasmtime_context wasmtime_context_t;
#endif
wasmtime_store_t *wasmtime_store_new(wasm_engine_t *engine, void *data,
                                     void (*finalizer)(void *));
wasmtime_context_t *wasmtime_store_context(wasmtime_store_t *store);
void wasmtime_store_limiter(wasmtime_store_t *store, int64_t memory_size,
                            int64_t table_elements, int64_t instances,
                            int64_t tables, int64_t memories);
void wasmtime_store_delete(wasmtime_store_t *store);
void *wasmtime_context_get_data(const wasmtime_context_t *context);
wasmtime_error_t *wasmtime_context_set_fuel(wasmtime_context_t *store, uint64_t fuel);
wasmtime_error_t *wasmtime_context_get_fuel(const wasmtime_context_t *context,
                                            uint64_t *fuel);
wasmtime_error_t *wasmtime_context_set_wasi(wasmtime_context_t *context,
                                            wasi_config_t *wasi);
void wasmtime_context_set_epoch_deadline(wasmtime_context_t *context,
                                         uint64_t ticks_beyond_current);
#ifndef TH_REAL_HEADERS

// ---- wasmtime/component/types/*.h -------------------------------------------

typedef struct wasmtime_module_type wasmtime_module_type_t;
typedef struct wasmtime_component_resource_type wasmtime_component_resource_type_t;
#endif
wasmtime_component_resource_type_t *wasmtime_component_resource_type_new_host(uint32_t ty);
bool wasmtime_component_resource_type_equal(const wasmtime_component_resource_type_t *a,
                                            const wasmtime_component_resource_type_t *b);
void wasmtime_component_resource_type_delete(wasmtime_component_resource_type_t *resource);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_list_type wasmtime_component_list_type_t;
typedef struct wasmtime_component_record_type wasmtime_component_record_type_t;
typedef struct wasmtime_component_tuple_type wasmtime_component_tuple_type_t;
typedef struct wasmtime_component_variant_type wasmtime_component_variant_type_t;
typedef struct wasmtime_component_enum_type wasmtime_component_enum_type_t;
typedef struct wasmtime_component_option_type wasmtime_component_option_type_t;
typedef struct wasmtime_component_result_type wasmtime_component_result_type_t;
typedef struct wasmtime_component_flags_type wasmtime_component_flags_type_t;
typedef struct wasmtime_component_future_type wasmtime_component_future_type_t;
typedef struct wasmtime_component_stream_type wasmtime_component_stream_type_t;

#define WASMTIME_COMPONENT_VALTYPE_BOOL 0
#define WASMTIME_COMPONENT_VALTYPE_S8 1
#define WASMTIME_COMPONENT_VALTYPE_S16 2
#define WASMTIME_COMPONENT_VALTYPE_S32 3
#define WASMTIME_COMPONENT_VALTYPE_S64 4
#define WASMTIME_COMPONENT_VALTYPE_U8 5
#define WASMTIME_COMPONENT_VALTYPE_U16 6
#define WASMTIME_COMPONENT_VALTYPE_U32 7
#define WASMTIME_COMPONENT_VALTYPE_U64 8
#define WASMTIME_COMPONENT_VALTYPE_F32 9
#define WASMTIME_COMPONENT_VALTYPE_F64 10
#define WASMTIME_COMPONENT_VALTYPE_CHAR 11
#define WASMTIME_COMPONENT_VALTYPE_STRING 12
#define WASMTIME_COMPONENT_VALTYPE_LIST 13
#define WASMTIME_COMPONENT_VALTYPE_RECORD 14
#define WASMTIME_COMPONENT_VALTYPE_TUPLE 15
#define WASMTIME_COMPONENT_VALTYPE_VARIANT 16
#define WASMTIME_COMPONENT_VALTYPE_ENUM 17
#define WASMTIME_COMPONENT_VALTYPE_OPTION 18
#define WASMTIME_COMPONENT_VALTYPE_RESULT 19
#define WASMTIME_COMPONENT_VALTYPE_FLAGS 20
#define WASMTIME_COMPONENT_VALTYPE_OWN 21
#define WASMTIME_COMPONENT_VALTYPE_BORROW 22
#define WASMTIME_COMPONENT_VALTYPE_FUTURE 23
#define WASMTIME_COMPONENT_VALTYPE_STREAM 24
#define WASMTIME_COMPONENT_VALTYPE_ERROR_CONTEXT 25
typedef uint8_t wasmtime_component_valtype_kind_t;

typedef union wasmtime_component_valtype_union {
  wasmtime_component_list_type_t *list;
  wasmtime_component_record_type_t *record;
  wasmtime_component_tuple_type_t *tuple;
  wasmtime_component_variant_type_t *variant;
  wasmtime_component_enum_type_t *enum_;
  wasmtime_component_option_type_t *option;
  wasmtime_component_result_type_t *result;
  wasmtime_component_flags_type_t *flags;
  wasmtime_component_resource_type_t *own;
  wasmtime_component_resource_type_t *borrow;
  wasmtime_component_future_type_t *future;
  wasmtime_component_stream_type_t *stream;
} wasmtime_component_valtype_union_t;

typedef struct wasmtime_component_valtype_t {
  wasmtime_component_valtype_kind_t kind;
  wasmtime_component_valtype_union_t of;
} wasmtime_component_valtype_t;
#endif

void wasmtime_component_valtype_delete(wasmtime_component_valtype_t *ptr);
void wasmtime_component_list_type_element(const wasmtime_component_list_type_t *ty,
                                          struct wasmtime_component_valtype_t *type_ret);
size_t wasmtime_component_record_type_field_count(const wasmtime_component_record_type_t *ty);
bool wasmtime_component_record_type_field_nth(const wasmtime_component_record_type_t *ty,
                                              size_t nth, const char **name_ret,
                                              size_t *name_len_ret,
                                              struct wasmtime_component_valtype_t *type_ret);
size_t wasmtime_component_tuple_type_types_count(const wasmtime_component_tuple_type_t *ty);
bool wasmtime_component_tuple_type_types_nth(const wasmtime_component_tuple_type_t *ty,
                                             size_t nth,
                                             struct wasmtime_component_valtype_t *type_ret);
size_t wasmtime_component_variant_type_case_count(const wasmtime_component_variant_type_t *ty);
bool wasmtime_component_variant_type_case_nth(const wasmtime_component_variant_type_t *ty,
                                              size_t nth, const char **name_ret,
                                              size_t *name_len_ret, bool *has_payload_ret,
                                              struct wasmtime_component_valtype_t *payload_ret);
size_t wasmtime_component_enum_type_names_count(const wasmtime_component_enum_type_t *ty);
bool wasmtime_component_enum_type_names_nth(const wasmtime_component_enum_type_t *ty,
                                            size_t nth, const char **name_ret,
                                            size_t *name_len_ret);
void wasmtime_component_option_type_ty(const wasmtime_component_option_type_t *ty,
                                       struct wasmtime_component_valtype_t *type_ret);
bool wasmtime_component_result_type_ok(const wasmtime_component_result_type_t *ty,
                                       struct wasmtime_component_valtype_t *type_ret);
bool wasmtime_component_result_type_err(const wasmtime_component_result_type_t *ty,
                                        struct wasmtime_component_valtype_t *type_ret);
size_t wasmtime_component_flags_type_names_count(const wasmtime_component_flags_type_t *ty);
bool wasmtime_component_flags_type_names_nth(const wasmtime_component_flags_type_t *ty,
                                             size_t nth, const char **name_ret,
                                             size_t *name_len_ret);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_func_type_t wasmtime_component_func_type_t;
#endif
void wasmtime_component_func_type_delete(wasmtime_component_func_type_t *ty);
size_t wasmtime_component_func_type_param_count(const wasmtime_component_func_type_t *ty);
bool wasmtime_component_func_type_param_nth(const wasmtime_component_func_type_t *ty,
                                            size_t nth, const char **name_ret,
                                            size_t *name_len_ret,
                                            wasmtime_component_valtype_t *type_ret);
bool wasmtime_component_func_type_result(const wasmtime_component_func_type_t *ty,
                                         wasmtime_component_valtype_t *type_ret);
#ifndef TH_REAL_HEADERS

struct wasmtime_component_item_t;
typedef struct wasmtime_component_instance_type wasmtime_component_instance_type_t;
#endif
size_t wasmtime_component_instance_type_export_count(const wasmtime_component_instance_type_t *ty,
                                                     const wasm_engine_t *engine);
bool wasmtime_component_instance_type_export_nth(const wasmtime_component_instance_type_t *ty,
                                                 const wasm_engine_t *engine, size_t nth,
                                                 const char **name_ret, size_t *name_len_ret,
                                                 struct wasmtime_component_item_t *type_ret);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_type_t wasmtime_component_type_t;
#endif
void wasmtime_component_type_delete(wasmtime_component_type_t *ty);
size_t wasmtime_component_type_import_count(const wasmtime_component_type_t *ty,
                                            const wasm_engine_t *engine);
bool wasmtime_component_type_import_nth(const wasmtime_component_type_t *ty,
                                        const wasm_engine_t *engine, size_t nth,
                                        const char **name_ret, size_t *name_len_ret,
                                        struct wasmtime_component_item_t *type_ret);
size_t wasmtime_component_type_export_count(const wasmtime_component_type_t *ty,
                                            const wasm_engine_t *engine);
bool wasmtime_component_type_export_nth(const wasmtime_component_type_t *ty,
                                        const wasm_engine_t *engine, size_t nth,
                                        const char **name_ret, size_t *name_len_ret,
                                        struct wasmtime_component_item_t *type_ret);
#ifndef TH_REAL_HEADERS

#define WASMTIME_COMPONENT_ITEM_COMPONENT 0
#define WASMTIME_COMPONENT_ITEM_COMPONENT_INSTANCE 1
#define WASMTIME_COMPONENT_ITEM_MODULE 2
#define WASMTIME_COMPONENT_ITEM_COMPONENT_FUNC 3
#define WASMTIME_COMPONENT_ITEM_RESOURCE 4
#define WASMTIME_COMPONENT_ITEM_CORE_FUNC 5
#define WASMTIME_COMPONENT_ITEM_TYPE 6
typedef uint8_t wasmtime_component_item_kind_t;

typedef union wasmtime_component_item_union {
  wasmtime_component_type_t *component;
  wasmtime_component_instance_type_t *component_instance;
  wasmtime_module_type_t *module;
  wasmtime_component_func_type_t *component_func;
  wasmtime_component_resource_type_t *resource;
  wasm_functype_t *core_func;
  wasmtime_component_valtype_t type;
} wasmtime_component_item_union_t;

typedef struct wasmtime_component_item_t {
  wasmtime_component_item_kind_t kind;
  wasmtime_component_item_union_t of;
} wasmtime_component_item_t;
#endif
void wasmtime_component_item_delete(wasmtime_component_item_t *ptr);
#ifndef TH_REAL_HEADERS

// ---- wasmtime/component/component.h -----------------------------------------

typedef struct wasmtime_component_t wasmtime_component_t;
#endif
wasmtime_error_t *wasmtime_component_new(const wasm_engine_t *engine, const uint8_t *buf,
                                         size_t len, wasmtime_component_t **component_out);
// wasmtime/wat.h
wasmtime_error_t *wasmtime_wat2wasm(const char *wat, size_t wat_len, wasm_byte_vec_t *ret);
wasmtime_error_t *wasmtime_component_serialize(const wasmtime_component_t *component,
                                               wasm_byte_vec_t *ret);
wasmtime_error_t *wasmtime_component_deserialize(const wasm_engine_t *engine,
                                                 const uint8_t *buf, size_t len,
                                                 wasmtime_component_t **component_out);
wasmtime_error_t *wasmtime_component_deserialize_file(const wasm_engine_t *engine,
                                                      const char *path,
                                                      wasmtime_component_t **component_out);
wasmtime_component_type_t *wasmtime_component_type(const wasmtime_component_t *component);
void wasmtime_component_delete(wasmtime_component_t *component);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_export_index_t wasmtime_component_export_index_t;
#endif
void wasmtime_component_export_index_delete(wasmtime_component_export_index_t *export_index);
#ifndef TH_REAL_HEADERS

// ---- wasmtime/component/val.h -------------------------------------------------

typedef struct wasmtime_component_resource_any wasmtime_component_resource_any_t;
#endif
wasmtime_component_resource_any_t *
wasmtime_component_resource_any_clone(const wasmtime_component_resource_any_t *resource);
bool wasmtime_component_resource_any_owned(const wasmtime_component_resource_any_t *resource);
wasmtime_error_t *wasmtime_component_resource_any_drop(
    wasmtime_context_t *ctx, const wasmtime_component_resource_any_t *resource);
void wasmtime_component_resource_any_delete(wasmtime_component_resource_any_t *resource);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_resource_host wasmtime_component_resource_host_t;
#endif
wasmtime_component_resource_host_t *wasmtime_component_resource_host_new(bool owned,
                                                                         uint32_t rep,
                                                                         uint32_t ty);
uint32_t wasmtime_component_resource_host_rep(const wasmtime_component_resource_host_t *resource);
uint32_t wasmtime_component_resource_host_type(const wasmtime_component_resource_host_t *resource);
bool wasmtime_component_resource_host_owned(const wasmtime_component_resource_host_t *resource);
void wasmtime_component_resource_host_delete(wasmtime_component_resource_host_t *resource);
wasmtime_error_t *wasmtime_component_resource_any_to_host(
    wasmtime_context_t *ctx, const wasmtime_component_resource_any_t *resource,
    wasmtime_component_resource_host_t **ret);
wasmtime_error_t *wasmtime_component_resource_host_to_any(
    wasmtime_context_t *ctx, const wasmtime_component_resource_host_t *resource,
    wasmtime_component_resource_any_t **ret);
#ifndef TH_REAL_HEADERS

typedef uint8_t wasmtime_component_valkind_t;
#define WASMTIME_COMPONENT_BOOL 0
#define WASMTIME_COMPONENT_S8 1
#define WASMTIME_COMPONENT_U8 2
#define WASMTIME_COMPONENT_S16 3
#define WASMTIME_COMPONENT_U16 4
#define WASMTIME_COMPONENT_S32 5
#define WASMTIME_COMPONENT_U32 6
#define WASMTIME_COMPONENT_S64 7
#define WASMTIME_COMPONENT_U64 8
#define WASMTIME_COMPONENT_F32 9
#define WASMTIME_COMPONENT_F64 10
#define WASMTIME_COMPONENT_CHAR 11
#define WASMTIME_COMPONENT_STRING 12
#define WASMTIME_COMPONENT_LIST 13
#define WASMTIME_COMPONENT_RECORD 14
#define WASMTIME_COMPONENT_TUPLE 15
#define WASMTIME_COMPONENT_VARIANT 16
#define WASMTIME_COMPONENT_ENUM 17
#define WASMTIME_COMPONENT_OPTION 18
#define WASMTIME_COMPONENT_RESULT 19
#define WASMTIME_COMPONENT_FLAGS 20
#define WASMTIME_COMPONENT_RESOURCE 21

struct wasmtime_component_val;
struct wasmtime_component_valrecord_entry;

typedef struct wasmtime_component_vallist {
  size_t size;
  struct wasmtime_component_val *data;
} wasmtime_component_vallist_t;
#endif
void wasmtime_component_vallist_new_uninit(wasmtime_component_vallist_t *out, size_t size);
void wasmtime_component_vallist_new_empty(wasmtime_component_vallist_t *out);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_valrecord {
  size_t size;
  struct wasmtime_component_valrecord_entry *data;
} wasmtime_component_valrecord_t;
#endif
void wasmtime_component_valrecord_new_uninit(wasmtime_component_valrecord_t *out, size_t size);
void wasmtime_component_valrecord_new_empty(wasmtime_component_valrecord_t *out);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_valtuple {
  size_t size;
  struct wasmtime_component_val *data;
} wasmtime_component_valtuple_t;
#endif
void wasmtime_component_valtuple_new_uninit(wasmtime_component_valtuple_t *out, size_t size);
void wasmtime_component_valtuple_new_empty(wasmtime_component_valtuple_t *out);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_valflags {
  size_t size;
  wasm_name_t *data;
} wasmtime_component_valflags_t;
#endif
void wasmtime_component_valflags_new_uninit(wasmtime_component_valflags_t *out, size_t size);
void wasmtime_component_valflags_new_empty(wasmtime_component_valflags_t *out);
#ifndef TH_REAL_HEADERS

typedef struct {
  wasm_name_t discriminant;
  struct wasmtime_component_val *val;
} wasmtime_component_valvariant_t;

typedef struct {
  bool is_ok;
  struct wasmtime_component_val *val;
} wasmtime_component_valresult_t;

typedef union {
  bool boolean;
  int8_t s8;
  uint8_t u8;
  int16_t s16;
  uint16_t u16;
  int32_t s32;
  uint32_t u32;
  int64_t s64;
  uint64_t u64;
  float32_t f32;
  float64_t f64;
  uint32_t character;
  wasm_name_t string;
  wasmtime_component_vallist_t list;
  wasmtime_component_valrecord_t record;
  wasmtime_component_valtuple_t tuple;
  wasmtime_component_valvariant_t variant;
  wasm_name_t enumeration;
  struct wasmtime_component_val *option;
  wasmtime_component_valresult_t result;
  wasmtime_component_valflags_t flags;
  wasmtime_component_resource_any_t *resource;
} wasmtime_component_valunion_t;

typedef struct wasmtime_component_val {
  wasmtime_component_valkind_t kind;
  wasmtime_component_valunion_t of;
} wasmtime_component_val_t;

typedef struct wasmtime_component_valrecord_entry {
  wasm_name_t name;
  wasmtime_component_val_t val;
} wasmtime_component_valrecord_entry_t;
#endif

wasmtime_component_val_t *wasmtime_component_val_new(wasmtime_component_val_t *val);
void wasmtime_component_val_free(wasmtime_component_val_t *ptr);
void wasmtime_component_val_delete(wasmtime_component_val_t *value);
#ifndef TH_REAL_HEADERS

// ---- wasmtime/component/func.h, instance.h, linker.h ------------------------

typedef struct wasmtime_component_func {
  struct {
    uint64_t store_id;
    uint32_t __private1;
  };
  uint32_t __private2;
} wasmtime_component_func_t;
#endif

wasmtime_component_func_type_t *wasmtime_component_func_type(const wasmtime_component_func_t *func,
                                                             wasmtime_context_t *context);
wasmtime_error_t *wasmtime_component_func_call(const wasmtime_component_func_t *func,
                                               wasmtime_context_t *context,
                                               const wasmtime_component_val_t *args,
                                               size_t args_size,
                                               wasmtime_component_val_t *results,
                                               size_t results_size);
wasmtime_error_t *wasmtime_component_func_post_return(const wasmtime_component_func_t *func,
                                                      wasmtime_context_t *context);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_instance {
  uint64_t store_id;
  uint32_t __private;
} wasmtime_component_instance_t;
#endif

wasmtime_component_export_index_t *wasmtime_component_instance_get_export_index(
    const wasmtime_component_instance_t *instance, wasmtime_context_t *context,
    const wasmtime_component_export_index_t *instance_export_index, const char *name,
    size_t name_len);
bool wasmtime_component_instance_get_func(const wasmtime_component_instance_t *instance,
                                          wasmtime_context_t *context,
                                          const wasmtime_component_export_index_t *export_index,
                                          wasmtime_component_func_t *func_out);
#ifndef TH_REAL_HEADERS

typedef struct wasmtime_component_linker_t wasmtime_component_linker_t;
typedef struct wasmtime_component_linker_instance_t wasmtime_component_linker_instance_t;
#endif
wasmtime_component_linker_t *wasmtime_component_linker_new(const wasm_engine_t *engine);
wasmtime_component_linker_instance_t *
wasmtime_component_linker_root(wasmtime_component_linker_t *linker);
wasmtime_error_t *wasmtime_component_linker_instantiate(const wasmtime_component_linker_t *linker,
                                                        wasmtime_context_t *context,
                                                        const wasmtime_component_t *component,
                                                        wasmtime_component_instance_t *instance_out);
wasmtime_error_t *
wasmtime_component_linker_define_unknown_imports_as_traps(wasmtime_component_linker_t *linker,
                                                          const wasmtime_component_t *component);
void wasmtime_component_linker_delete(wasmtime_component_linker_t *linker);
wasmtime_error_t *wasmtime_component_linker_instance_add_instance(
    wasmtime_component_linker_instance_t *linker_instance, const char *name, size_t name_len,
    wasmtime_component_linker_instance_t **linker_instance_out);
#ifndef TH_REAL_HEADERS

typedef wasmtime_error_t *(*wasmtime_component_func_callback_t)(
    void *, wasmtime_context_t *, const wasmtime_component_func_type_t *,
    wasmtime_component_val_t *, size_t, wasmtime_component_val_t *, size_t);
#endif
wasmtime_error_t *wasmtime_component_linker_instance_add_func(
    wasmtime_component_linker_instance_t *linker_instance, const char *name, size_t name_len,
    wasmtime_component_func_callback_t callback, void *data, void (*finalizer)(void *));
wasmtime_error_t *wasmtime_component_linker_add_wasip2(wasmtime_component_linker_t *linker);
#ifndef TH_REAL_HEADERS

typedef wasmtime_error_t *(*wasmtime_component_resource_destructor_t)(void *,
                                                                      wasmtime_context_t *,
                                                                      uint32_t);
#endif
wasmtime_error_t *wasmtime_component_linker_instance_add_resource(
    wasmtime_component_linker_instance_t *linker_instance, const char *name, size_t name_len,
    const wasmtime_component_resource_type_t *resource,
    wasmtime_component_resource_destructor_t destructor, void *data, void (*finalizer)(void *));
void wasmtime_component_linker_instance_delete(
    wasmtime_component_linker_instance_t *linker_instance);

// ---- this package's shims (shims.c) -----------------------------------------

// Trampolines handed to wasmtime as callbacks; data is a cgo.Handle value.
wasmtime_error_t *th_func_callback(void *data, wasmtime_context_t *ctx,
                                   const wasmtime_component_func_type_t *ty,
                                   wasmtime_component_val_t *args, size_t nargs,
                                   wasmtime_component_val_t *results, size_t nresults);
wasmtime_error_t *th_resource_dtor(void *data, wasmtime_context_t *ctx, uint32_t rep);
ptrdiff_t th_write_callback(void *data, const unsigned char *buf, size_t len);
void th_handle_finalizer(void *data);

// Helpers that keep C values off the Go heap.
wasmtime_component_val_t *th_val_box(void);
wasmtime_error_t *th_func_call(const wasmtime_component_func_t *func, wasmtime_context_t *ctx,
                               const wasmtime_component_val_t *args, size_t nargs,
                               wasmtime_component_val_t *results, size_t nresults,
                               int *post_return_failed);
bool th_set_argv(wasi_config_t *config, size_t argc, char **argv);

// Registration helpers taking a cgo.Handle as an integer.
wasmtime_store_t *th_store_new(wasm_engine_t *engine, uintptr_t handle);
void th_set_output(wasi_config_t *config, bool is_stdout, uintptr_t handle);
wasmtime_error_t *th_add_func(wasmtime_component_linker_instance_t *li, const char *name,
                              size_t name_len, uintptr_t handle);
// The benchmarks' baseline: a host function registered straight on the C
// API, its Go body reached with no binding code in between (baseline.go).
wasmtime_error_t *th_raw_add_echo(wasmtime_component_linker_instance_t *li, const char *name,
                                  size_t name_len, uintptr_t mode);
wasmtime_error_t *th_add_resource(wasmtime_component_linker_instance_t *li, const char *name,
                                  size_t name_len, uint32_t ty, uintptr_t handle);

#endif
