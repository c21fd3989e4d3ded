/* GLib and GIO (GDBus) for the daemon's event loop and its D-Bus front-end; never libfprint. */
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>
