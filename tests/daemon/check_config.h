/*
 * check_config.h - what check_config's files share: the test's daemon,
 * started in its own directory (relative paths land there), requests with
 * binary arguments, CONFIG GET *, and each file's TCase.
 */
#ifndef CHECK_CONFIG_H
#define CHECK_CONFIG_H

#include "rbd_test.h"

/* The test's daemon (rbd_teardown removes it). */
extern rbd_proc_t cfg_d;

/* rbd_launch with d's directory as the working directory. */
void cfg_launch(rbd_proc_t *d);
/* rbd_prepare (extra: config lines), then cfg_launch. */
void cfg_start(rbd_proc_t *d, const char *extra);
/* A command (argl NULL: C strings); rb_conn_command's code, the reply in buf. */
int cfg_call(rb_conn_t *c, char *buf, size_t cap, size_t argc, const char *const *argv,
             const size_t *argl);
/* CONFIG GET * into buf, asserting it answers. */
void cfg_get_all(rb_conn_t *c, char *buf, size_t cap);

TCase *config_files_tcase(void);
TCase *config_logfile_tcase(void);
TCase *config_secrets_tcase(void);

#endif /* CHECK_CONFIG_H */
