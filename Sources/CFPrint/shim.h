/* libfprint-2 and GLib for Swift, plus the few GLib macros Swift cannot import. */
#include <fprint.h>
#include <glib.h>

static inline GQuark cfp_device_error_quark(void) { return fp_device_error_quark(); }
static inline GQuark cfp_device_retry_quark(void) { return fp_device_retry_quark(); }
static inline GQuark cfp_io_error_quark(void) { return g_io_error_quark(); }
static inline void cfp_object_unref(void *object) { if (object) g_object_unref(object); }
static inline void *cfp_object_ref(void *object) { return g_object_ref(object); }
static inline void *cfp_ptr_array_index(GPtrArray *array, guint i) { return g_ptr_array_index(array, i); }
