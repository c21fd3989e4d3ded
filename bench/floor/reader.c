/* The floor: what any daemon serving this reader costs before it does anything of its own. It
 * opens the first reader libfprint finds (the bench's virtual one) and idles in GLib's loop with
 * it open, the state both daemons are measured in, less their own work (no bus, no prints, no
 * authentication). bench/floor.py links it twice: under a C main and under a static Swift main. */
#include <fprint.h>
#include <stdio.h>

int floor_serve(void)
{
    FpContext *context = fp_context_new();
    GPtrArray *readers = fp_context_get_devices(context);
    if (readers == NULL || readers->len == 0) {
        fprintf(stderr, "floor: no reader\n");
        return 1;
    }
    FpDevice *reader = g_ptr_array_index(readers, 0);
    GError *error = NULL;
    if (!fp_device_open_sync(reader, NULL, &error)) {
        fprintf(stderr, "floor: the reader did not open: %s\n", error->message);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    GMainLoop *loop = g_main_loop_new(NULL, FALSE);
    g_main_loop_run(loop);
    return 0;
}
