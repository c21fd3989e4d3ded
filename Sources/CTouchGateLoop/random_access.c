/* The daemon's executable is large (a static Swift runtime) and only a small, scattered part of
 * it runs: tell the kernel not to read or map ahead around each page it touches, so memory holds
 * the code that runs rather than its neighbours. Runs before main, once. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((constructor)) static void tg_executable_random_access(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return;
    self[n] = '\0';
    FILE *maps = fopen("/proc/self/maps", "re");
    if (maps == NULL)
        return;
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof(line), maps) != NULL) {
        unsigned long lo = 0, hi = 0;
        char *path = strchr(line, '/');
        if (path == NULL || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
            continue;
        path[strcspn(path, "\n")] = '\0';
        if (strcmp(path, self) == 0)
            madvise((void *)lo, hi - lo, MADV_RANDOM);
    }
    fclose(maps);
}
