/* libaudit (audit-userspace): the daemon's records to the Linux audit system. */
#include <libaudit.h>
