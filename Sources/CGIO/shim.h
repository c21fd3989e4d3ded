/* GLib for the daemon's event loop, linked; GIO's declarations (GDBus) for the types only: its
 * functions are called through CTouchGateLibs, which loads GIO when it is first needed. */
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>
