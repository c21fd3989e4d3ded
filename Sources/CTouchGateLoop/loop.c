/* tg_loop: a GLib main context driven by one thread, with a job queue, fd watches and timers. */
#include "tg_loop.h"

#include <glib.h>
#include <glib-unix.h>

struct job {
    tg_job_fn fn;
    void *arg;
};

/* The job queue is a GSource of its own: ready whenever jobs are queued. */
typedef struct {
    GSource base;
    GMutex lock;
    GArray *queue; /* struct job, guarded by lock */
    gint pending;  /* atomic: jobs queued, so prepare/check need no lock */
} JobSource;

struct tg_loop {
    GMainContext *context;
    GMainLoop *main_loop;
    JobSource *jobs;
};

static gboolean jobs_prepare(GSource *source, gint *timeout)
{
    *timeout = -1;
    return g_atomic_int_get(&((JobSource *)source)->pending) > 0;
}

static gboolean jobs_check(GSource *source)
{
    return g_atomic_int_get(&((JobSource *)source)->pending) > 0;
}

/* Runs the jobs queued when dispatch began; later ones wait for the next iteration, so fd watches
 * and timers get their turn even while jobs keep posting jobs. */
static gboolean jobs_dispatch(GSource *source, GSourceFunc callback, gpointer data)
{
    (void)callback;
    (void)data;
    JobSource *js = (JobSource *)source;
    g_mutex_lock(&js->lock);
    GArray *batch = js->queue;
    js->queue = g_array_new(FALSE, FALSE, sizeof(struct job));
    g_atomic_int_set(&js->pending, 0);
    g_mutex_unlock(&js->lock);
    for (guint i = 0; i < batch->len; i++) {
        struct job j = g_array_index(batch, struct job, i);
        j.fn(j.arg);
    }
    g_array_unref(batch);
    return G_SOURCE_CONTINUE;
}

static void jobs_finalize(GSource *source)
{
    JobSource *js = (JobSource *)source;
    g_array_unref(js->queue);
    g_mutex_clear(&js->lock);
}

static GSourceFuncs job_funcs = {
    jobs_prepare, jobs_check, jobs_dispatch, jobs_finalize, NULL, NULL
};

tg_loop *tg_loop_new(void)
{
    tg_loop *loop = g_new0(tg_loop, 1);
    loop->context = g_main_context_new();
    loop->main_loop = g_main_loop_new(loop->context, FALSE);
    loop->jobs = (JobSource *)g_source_new(&job_funcs, sizeof(JobSource));
    g_mutex_init(&loop->jobs->lock);
    loop->jobs->queue = g_array_new(FALSE, FALSE, sizeof(struct job));
    g_source_set_priority(&loop->jobs->base, G_PRIORITY_DEFAULT);
    g_source_attach(&loop->jobs->base, loop->context);
    return loop;
}

void tg_loop_run(tg_loop *loop)
{
    g_main_context_push_thread_default(loop->context);
    g_main_loop_run(loop->main_loop);
    g_main_context_pop_thread_default(loop->context);
}

void tg_loop_quit(tg_loop *loop)
{
    g_main_loop_quit(loop->main_loop);
}

void tg_loop_post(tg_loop *loop, tg_job_fn fn, void *arg)
{
    JobSource *js = loop->jobs;
    struct job j = { fn, arg };
    g_mutex_lock(&js->lock);
    g_array_append_val(js->queue, j);
    gboolean first = g_atomic_int_add(&js->pending, 1) == 0;
    g_mutex_unlock(&js->lock);
    /* The loop's own thread needs no wake-up: it prepares the queue again before it polls. */
    if (first && !g_main_context_is_owner(loop->context))
        g_main_context_wakeup(loop->context);
}

typedef struct {
    GSource base;
    gpointer tag;
    int fd;
    tg_fd_fn fn;
    void *arg;
} FdSource;

static gboolean fd_dispatch(GSource *source, GSourceFunc callback, gpointer data)
{
    (void)callback;
    (void)data;
    FdSource *f = (FdSource *)source;
    GIOCondition revents = g_source_query_unix_fd(source, f->tag);
    return f->fn(f->fd, (unsigned)revents, f->arg) ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static GSourceFuncs fd_funcs = { NULL, NULL, fd_dispatch, NULL, NULL, NULL };

unsigned tg_loop_watch(tg_loop *loop, int fd, unsigned events, tg_fd_fn fn, void *arg)
{
    FdSource *f = (FdSource *)g_source_new(&fd_funcs, sizeof(FdSource));
    f->fd = fd;
    f->fn = fn;
    f->arg = arg;
    f->tag = g_source_add_unix_fd(&f->base, fd, (GIOCondition)events);
    unsigned id = g_source_attach(&f->base, loop->context);
    g_source_unref(&f->base); /* the context holds it until it is removed */
    return id;
}

void tg_loop_watch_events(tg_loop *loop, unsigned id, unsigned events)
{
    GSource *source = g_main_context_find_source_by_id(loop->context, id);
    if (source != NULL && !g_source_is_destroyed(source))
        g_source_modify_unix_fd(source, ((FdSource *)source)->tag, (GIOCondition)events);
}

typedef struct {
    tg_timer_fn fn;
    void *arg;
} TimerCall;

static gboolean timer_fired(gpointer data)
{
    TimerCall *t = data;
    return t->fn(t->arg) ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

unsigned tg_loop_timer(tg_loop *loop, unsigned milliseconds, tg_timer_fn fn, void *arg)
{
    TimerCall *t = g_new(TimerCall, 1);
    t->fn = fn;
    t->arg = arg;
    GSource *source = g_timeout_source_new(milliseconds);
    g_source_set_callback(source, timer_fired, t, g_free);
    unsigned id = g_source_attach(source, loop->context);
    g_source_unref(source);
    return id;
}

void tg_loop_remove(tg_loop *loop, unsigned id)
{
    if (id == 0)
        return;
    GSource *source = g_main_context_find_source_by_id(loop->context, id);
    if (source != NULL && !g_source_is_destroyed(source))
        g_source_destroy(source);
}

void *tg_loop_main_context(tg_loop *loop)
{
    return loop->context;
}
