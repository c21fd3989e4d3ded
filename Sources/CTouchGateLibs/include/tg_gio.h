/* GIO (GDBus, GCancellable), loaded at run time (dlopen) rather than by the dynamic loader at exec:
 * the daemon's start needs only GLib, and GIO with the libraries it pulls in (libmount, libblkid,
 * libselinux, gmodule, zlib) loads when the reader or the D-Bus front-end first needs it — by then
 * usually already there, as libfprint's dependency. GIO ships in the same package as GLib.
 * The functions used are tgg_* (tg + GIO's name) with GIO's signatures; call tg_gio_load() first
 * (from any thread, as often as wanted) and only call them when it returned true. */
#ifndef TG_GIO_H
#define TG_GIO_H

/* The tables below (constants, X-macro lists) are laid out by hand. */
/* clang-format off */

#include <stdbool.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>

/* Loads libgio-2.0.so.0 and resolves every function below, once; false (and *error, a static text,
 * when error is not NULL) if it cannot. */
bool tg_gio_load(const char **error);

/* (return type, GIO's name, parameters, arguments); tg<name> calls GIO's <name>. */
#define TG_GIO_FUNCTIONS(X, XV)                                                                     \
    X(GCancellable *, g_cancellable_new, (void), ())                                                \
    XV(g_cancellable_cancel, (GCancellable *c), (c))                                                \
    X(GQuark, g_io_error_quark, (void), ())                                                         \
    XV(g_bus_get, (GBusType t, GCancellable *k, GAsyncReadyCallback cb, gpointer data), (t, k, cb, data)) \
    X(GDBusConnection *, g_bus_get_finish, (GAsyncResult *r, GError **e), (r, e))                   \
    X(guint, g_bus_own_name_on_connection,                                                          \
      (GDBusConnection *c, const gchar *name, GBusNameOwnerFlags f, GBusNameAcquiredCallback acquired, \
       GBusNameLostCallback lost, gpointer data, GDestroyNotify free_data),                         \
      (c, name, f, acquired, lost, data, free_data))                                                \
    X(guint, g_bus_watch_name_on_connection,                                                        \
      (GDBusConnection *c, const gchar *name, GBusNameWatcherFlags f, GBusNameAppearedCallback appeared, \
       GBusNameVanishedCallback vanished, gpointer data, GDestroyNotify free_data),                 \
      (c, name, f, appeared, vanished, data, free_data))                                            \
    XV(g_bus_unwatch_name, (guint id), (id))                                                        \
    XV(g_bus_unown_name, (guint id), (id))                                                          \
    X(gboolean, g_dbus_connection_unregister_object, (GDBusConnection *c, guint id), (c, id))      \
    XV(g_dbus_connection_signal_unsubscribe, (GDBusConnection *c, guint id), (c, id))              \
    XV(g_dbus_connection_set_exit_on_close, (GDBusConnection *c, gboolean exit), (c, exit))        \
    XV(g_dbus_connection_call,                                                                      \
       (GDBusConnection *c, const gchar *bus, const gchar *path, const gchar *iface, const gchar *method, \
        GVariant *params, const GVariantType *reply, GDBusCallFlags f, gint timeout, GCancellable *k, \
        GAsyncReadyCallback cb, gpointer data),                                                     \
       (c, bus, path, iface, method, params, reply, f, timeout, k, cb, data))                       \
    X(GVariant *, g_dbus_connection_call_finish, (GDBusConnection *c, GAsyncResult *r, GError **e), (c, r, e)) \
    XV(g_dbus_connection_call_with_unix_fd_list,                                                    \
       (GDBusConnection *c, const gchar *bus, const gchar *path, const gchar *iface, const gchar *method, \
        GVariant *params, const GVariantType *reply, GDBusCallFlags f, gint timeout, GUnixFDList *fds, \
        GCancellable *k, GAsyncReadyCallback cb, gpointer data),                                    \
       (c, bus, path, iface, method, params, reply, f, timeout, fds, k, cb, data))                  \
    X(GVariant *, g_dbus_connection_call_with_unix_fd_list_finish,                                  \
      (GDBusConnection *c, GUnixFDList **fds, GAsyncResult *r, GError **e), (c, fds, r, e))         \
    X(gboolean, g_dbus_connection_emit_signal,                                                      \
      (GDBusConnection *c, const gchar *destination, const gchar *path, const gchar *iface,         \
       const gchar *signal, GVariant *params, GError **e),                                          \
      (c, destination, path, iface, signal, params, e))                                             \
    X(guint, g_dbus_connection_register_object,                                                     \
      (GDBusConnection *c, const gchar *path, GDBusInterfaceInfo *info, const GDBusInterfaceVTable *vtable, \
       gpointer data, GDestroyNotify free_data, GError **e),                                        \
      (c, path, info, vtable, data, free_data, e))                                                  \
    X(guint, g_dbus_connection_signal_subscribe,                                                    \
      (GDBusConnection *c, const gchar *sender, const gchar *iface, const gchar *member,            \
       const gchar *path, const gchar *arg0, GDBusSignalFlags f, GDBusSignalCallback cb,            \
       gpointer data, GDestroyNotify free_data),                                                    \
      (c, sender, iface, member, path, arg0, f, cb, data, free_data))                               \
    X(gchar *, g_dbus_error_get_remote_error, (const GError *e), (e))                               \
    X(const gchar *, g_dbus_method_invocation_get_method_name, (GDBusMethodInvocation *i), (i))     \
    X(GVariant *, g_dbus_method_invocation_get_parameters, (GDBusMethodInvocation *i), (i))         \
    X(const gchar *, g_dbus_method_invocation_get_sender, (GDBusMethodInvocation *i), (i))          \
    XV(g_dbus_method_invocation_return_dbus_error,                                                  \
       (GDBusMethodInvocation *i, const gchar *name, const gchar *message), (i, name, message))    \
    XV(g_dbus_method_invocation_return_value, (GDBusMethodInvocation *i, GVariant *v), (i, v))      \
    X(GDBusInterfaceInfo *, g_dbus_node_info_lookup_interface, (GDBusNodeInfo *n, const gchar *name), (n, name)) \
    X(GDBusNodeInfo *, g_dbus_node_info_new_for_xml, (const gchar *xml, GError **e), (xml, e))     \
    X(gint, g_unix_fd_list_get, (GUnixFDList *l, gint index, GError **e), (l, index, e))

#define TG_GIO_PROTOTYPE(ret, name, params, args) ret tg##name params;
#define TG_GIO_PROTOTYPE_VOID(name, params, args) void tg##name params;
TG_GIO_FUNCTIONS(TG_GIO_PROTOTYPE, TG_GIO_PROTOTYPE_VOID)

/* clang-format on */

#endif
