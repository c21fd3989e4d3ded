/* libfprint-2 for the reader, loaded at run time (dlopen) by the reader thread rather than by the
 * dynamic loader at exec: libfprint and the libraries it needs (NSS, pixman, gusb, libusb, udev…)
 * then load beside the daemon's own start instead of before it, and READY=1 does not wait for them.
 * The functions the reader calls are tgfp_* with libfprint's signatures; call tg_fprint_load()
 * (once or many times, from any thread) and only call them when it returned true. */
#ifndef TG_FPRINT_H
#define TG_FPRINT_H

/* The tables below (constants, X-macro lists) are laid out by hand. */
/* clang-format off */

#include <stdbool.h>
#include <time.h>
#include <libfprint-2/fprint.h>

#include "tg_gio.h"

/* Loads libfprint-2.so.2 and resolves every function below, once, and GIO (tg_gio.h) which the
 * reader needs beside it; false (and *error, a static text, when error is not NULL) if a library
 * or one of its functions is missing. */
bool tg_fprint_load(const char **error);

/* (return type, libfprint's name, parameters, arguments); tgfp_<name> calls libfprint's <name>. */
#define TG_FPRINT_FUNCTIONS(X, XV)                                                                  \
    X(FpContext *, fp_context_new, (void), ())                                                      \
    X(GPtrArray *, fp_context_get_devices, (FpContext *c), (c))                                     \
    X(gboolean, fp_device_open_sync, (FpDevice *d, GCancellable *k, GError **e), (d, k, e))         \
    X(gboolean, fp_device_close_sync, (FpDevice *d, GCancellable *k, GError **e), (d, k, e))        \
    X(const gchar *, fp_device_get_name, (FpDevice *d), (d))                                        \
    X(const gchar *, fp_device_get_driver, (FpDevice *d), (d))                                      \
    X(const gchar *, fp_device_get_device_id, (FpDevice *d), (d))                                   \
    X(gint, fp_device_get_nr_enroll_stages, (FpDevice *d), (d))                                     \
    X(gboolean, fp_device_has_feature, (FpDevice *d, FpDeviceFeature f), (d, f))                    \
    X(FpScanType, fp_device_get_scan_type, (FpDevice *d), (d))                                      \
    X(FpFingerStatusFlags, fp_device_get_finger_status, (FpDevice *d), (d))                         \
    X(FpPrint *, fp_device_enroll_sync,                                                             \
      (FpDevice *d, FpPrint *t, GCancellable *k, FpEnrollProgress cb, gpointer data, GError **e),  \
      (d, t, k, cb, data, e))                                                                       \
    X(gboolean, fp_device_verify_sync,                                                              \
      (FpDevice *d, FpPrint *p, GCancellable *k, FpMatchCb cb, gpointer data, gboolean *match,      \
       FpPrint **print, GError **e),                                                                \
      (d, p, k, cb, data, match, print, e))                                                         \
    X(gboolean, fp_device_identify_sync,                                                            \
      (FpDevice *d, GPtrArray *prints, GCancellable *k, FpMatchCb cb, gpointer data,               \
       FpPrint **match, FpPrint **print, GError **e),                                               \
      (d, prints, k, cb, data, match, print, e))                                                    \
    X(gboolean, fp_device_has_storage, (FpDevice *d), (d))                                          \
    X(GPtrArray *, fp_device_list_prints_sync, (FpDevice *d, GCancellable *k, GError **e), (d, k, e)) \
    X(gboolean, fp_print_equal, (FpPrint *a, FpPrint *b), (a, b))                                   \
    X(gboolean, fp_device_delete_print_sync, (FpDevice *d, FpPrint *p, GCancellable *k, GError **e), \
      (d, p, k, e))                                                                                 \
    X(gboolean, fp_device_clear_storage_sync, (FpDevice *d, GCancellable *k, GError **e), (d, k, e)) \
    X(FpPrint *, fp_print_new, (FpDevice *d), (d))                                                  \
    XV(fp_print_set_finger, (FpPrint *p, FpFinger f), (p, f))                                       \
    XV(fp_print_set_username, (FpPrint *p, const gchar *u), (p, u))                                 \
    XV(fp_print_set_enroll_date, (FpPrint *p, const GDate *d), (p, d))                              \
    X(gboolean, fp_print_serialize, (FpPrint *p, guchar **data, gsize *length, GError **e),         \
      (p, data, length, e))                                                                         \
    X(FpPrint *, fp_print_deserialize, (const guchar *data, gsize length, GError **e),              \
      (data, length, e))                                                                            \
    X(const gchar *, fp_print_get_driver, (FpPrint *p), (p))                                        \
    X(const gchar *, fp_print_get_device_id, (FpPrint *p), (p))                                     \
    X(FpFinger, fp_print_get_finger, (FpPrint *p), (p))                                             \
    X(const gchar *, fp_print_get_username, (FpPrint *p), (p))                                      \
    X(gboolean, fp_print_get_device_stored, (FpPrint *p), (p))                                      \
    X(GQuark, fp_device_error_quark, (void), ())                                                    \
    X(GQuark, fp_device_retry_quark, (void), ())

#define TG_FPRINT_PROTOTYPE(ret, name, params, args) ret tg##name params;
#define TG_FPRINT_PROTOTYPE_VOID(name, params, args) void tg##name params;
TG_FPRINT_FUNCTIONS(TG_FPRINT_PROTOTYPE, TG_FPRINT_PROTOTYPE_VOID)

/* GLib's macros and inline helpers, which Swift cannot import. */
static inline GQuark cfp_device_error_quark(void) { return tgfp_device_error_quark(); }
static inline GQuark cfp_device_retry_quark(void) { return tgfp_device_retry_quark(); }
static inline GQuark cfp_io_error_quark(void) { return tgg_io_error_quark(); }
static inline void cfp_object_unref(void *object) { if (object) g_object_unref(object); }
/* Today's date on a new print, as fprintd dates its templates: a chip names its records by it, and
 * a full chip's oldest prints are the ones deleted first. */
static inline void cfp_print_set_enroll_date_today(FpPrint *p)
{
    GDate *d = g_date_new();
    g_date_set_time_t(d, time(NULL));
    tgfp_print_set_enroll_date(p, d);
    g_date_free(d);
}
static inline void *cfp_object_ref(void *object) { return g_object_ref(object); }
static inline void *cfp_object_ref_sink(void *object) { return g_object_ref_sink(object); }
static inline void *cfp_ptr_array_index(GPtrArray *array, guint i) { return g_ptr_array_index(array, i); }
/* libfprint's "removed" property: the device was unplugged (it stays listed until closed). */
static inline gboolean cfp_device_removed(void *device) {
    gboolean removed = FALSE;
    g_object_get(device, "removed", &removed, NULL);
    return removed;
}

/* clang-format on */

#endif
