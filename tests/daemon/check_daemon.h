/*
 * check_daemon.h - the TCases of check_daemon that live in files of their
 * own (its main() is in check_daemon.c).
 */
#ifndef CHECK_DAEMON_H
#define CHECK_DAEMON_H

#include "rbd_test.h"

TCase *daemon_durability_tcase(void);   /* check_daemon_durability.c */
TCase *daemon_access_tcase(void);       /* check_daemon_access.c */
TCase *daemon_cli_tcase(void);          /* check_daemon_access.c */
TCase *daemon_cli_writes_tcase(void);   /* check_daemon_cli.c */

#endif
