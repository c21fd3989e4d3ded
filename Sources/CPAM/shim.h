/* Linux-PAM's application API, for the daemon's own password check. */
#include <security/pam_appl.h>
#include <stdlib.h>
#include <string.h>
