/*
 * main.c - the ringbloom command-line client: its global options, its
 * usage, and the table of subcommands that dispatches to their handlers.
 *
 * Reads (lookup, exists, nodes, filters: reads.c) are answered from
 * shared memory, with no round trip to the daemon; changes (add, load,
 * node, reserve, reset, delete, shutdown: writes.c) go to the daemon over
 * its socket, and so do dump and restore (dump.c), info (info.c), metrics (metrics.c) and
 * import-cluster (cluster.c, which reads a Redis Cluster node over TCP
 * first); ring (ring_offline.c) and keyslot (cluster.c) need no daemon.  A subcommand is one row of the table below (its name, its
 * handler, its usage lines under their heading) and one handler; the exit
 * codes are in cli.h.
 */
#include "config.h"

#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The headings subcommands are listed under in the usage. */
static const char SHM[] = "answered from shared memory (no daemon round trip):\n";
static const char DAEMON[] = "sent to the daemon:\n";
static const char OFFLINE[] = "offline, no daemon:\n";

#define ANY -1

static const struct command {
    const char *name;
    int min_args, max_args; /* words after the name: main checks them (ANY: no most) */
    cli_cmd_fn *fn;
    const char *heading;    /* SHM, DAEMON or OFFLINE: rows of one heading stand together */
    const char *help;       /* its lines in the usage */
} commands[] = {
    { "lookup", 1, ANY, cmd_lookup, SHM,
      "  lookup KEY [-n N]            node owning KEY (or the first N distinct nodes)\n"
      "  lookup -                     KEY<TAB>NODE for every line of standard input\n" },
    { "exists", 2, ANY, cmd_exists, SHM,
      "  exists FILTER KEY...         is each KEY (maybe) in FILTER?\n" },
    { "nodes", 0, 0, cmd_nodes, SHM,
      "  nodes                        ring members and weights\n" },
    { "filters", 0, 0, cmd_filters, SHM,
      "  filters                      every filter: kind, items, capacity, bytes\n" },
    { "add", 2, ANY, cmd_add, DAEMON,
      "  add FILTER KEY...            add keys; prints new / present per key\n" },
    { "load", 2, 6, cmd_load, DAEMON,
      "  load FILTER FILE|- [--error RATE [--capacity N]]\n"
      "                               add one key per line, with a progress bar on a TTY;\n"
      "                               a missing FILTER is refused, or made with --error\n"
      "                               and --capacity (default: FILE's keys)\n" },
    { "dump", 2, 4, cmd_dump, DAEMON,
      "  dump FILTER FILE|- [--format redisbloom|ringbloom]\n"
      "                               a Bloom, cuckoo or counting Bloom filter to a file\n" },
    { "restore", 2, 3, cmd_restore, DAEMON,
      "  restore FILTER FILE|- [--replace]\n"
      "                               a dump into a new filter (--replace: over FILTER)\n" },
    { "node", 2, 3, cmd_node, DAEMON,
      "  node add NAME [WEIGHT]       join the ring (default weight 1)\n"
      "  node remove NAME             leave the ring\n"
      "  node weight NAME WEIGHT      change a node's weight\n"
      "  node down|up|drain NAME      change a node's state (its points stay)\n" },
    { "reserve", 3, ANY, cmd_reserve, DAEMON,
      "  reserve FILTER ERROR CAPACITY [--nonscaling] [--expansion N]\n"
      "          [--layout standard|blocked|redisbloom] [--aging SECONDS [--generations N]]\n" },
    { "reset", 1, 1, cmd_reset, DAEMON,
      "  reset FILTER                 clear every bit of the filter\n" },
    { "delete", 1, ANY, cmd_delete, DAEMON,
      "  delete FILTER...             delete filters; prints deleted / absent per filter\n" },
    { "info", 0, 1, cmd_info, DAEMON,
      "  info [SECTION]               the daemon's INFO (--json: an object per section)\n" },
    { "metrics", 0, 0, cmd_metrics, DAEMON,
      "  metrics                      INFO, ring and filters as Prometheus text\n" },
    { "shutdown", 0, 0, cmd_shutdown, DAEMON,
      "  shutdown                     snapshot and stop the daemon\n" },
    { "import-cluster", 2, 3, cmd_import_cluster, DAEMON,
      "  import-cluster HOST PORT [--dry-run]\n"
      "                               the slots ring from a Redis Cluster node's slot map,\n"
      "                               in one transaction (--dry-run: print the commands)\n" },
    { "ring", 0, ANY, cmd_ring, OFFLINE,
      "  ring --mode xxh3|ketama|nginx|seed|maglev|slots --nodes FILE [--replicas R] < KEYS\n"
      "                               KEY<TAB>NODE per input line; FILE has one\n"
      "                               NAME [WEIGHT] per line (host:port for ketama/nginx,\n"
      "                               in the other side's server order)\n" },
    { "keyslot", 1, ANY, cmd_keyslot, OFFLINE,
      "  keyslot KEY...               Redis Cluster's slot of each KEY (CLUSTER KEYSLOT)\n"
      "  keyslot -                    KEY<TAB>SLOT for every line of standard input\n" },
};

static void usage(FILE *f)
{
    const char *heading = NULL;

    fputs("usage: ringbloom [--instance NAME] [--socket PATH] [--owner USER|UID]\n"
          "                 [--timeout SECONDS] [--json] COMMAND [ARGS]\n"
          "\n"
          "  --instance   the daemon's instance (default 'default'); without --socket its\n"
          "               socket is looked for in your runtime directory, then in\n"
          "               /run/ringbloom\n"
          "  --socket     the daemon's socket; without --instance the daemon there names\n"
          "               its instance\n"
          "  --owner      the daemon's user: reads use only a segment it owns (default:\n"
          "               the owner of the socket's directory, which must be root's, yours,\n"
          "               or one root made in a directory only root can write, as\n"
          "               /run/ringbloom)\n"
          "  --timeout    seconds to wait for the daemon's answer (default 10)\n"
          "\n", f);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (commands[i].heading != heading) {
            heading = commands[i].heading;
            fputs(heading, f);
        }
        fputs(commands[i].help, f);
    }
    fputs("\n"
          "node names print with C escapes (\\t \\n \\\\ \\xNN) for control bytes,\n"
          "backslashes and bytes not UTF-8; --json prints that text as JSON strings\n"
          "\n"
          "exit status: 0 ok / all present, 1 some key not present, no such filter\n"
          "             or an empty ring, 2 usage,\n"
          "             3 daemon or segment unreachable (or no answer in time),\n"
          "             4 refused by the daemon, 5 other\n", f);
}

/* A usage error says what is wrong and points here, rather than print
 * the whole usage. */
#define MORE "ringbloom --help lists the commands and options"

/* A command given too few or too many words (args, nargs of them): says
 * how many it takes, and the first word too many. */
static int count_error(const struct command *cmd, char **args, int nargs)
{
    if (nargs < cmd->min_args)
        return cli_usage(cmd->name, "%d argument%s given, it wants %s%d", nargs,
                         nargs == 1 ? "" : "s", cmd->max_args == cmd->min_args ? "" :
                         "at least ", cmd->min_args);
    return cli_usage(cmd->name, "unexpected argument '%s' (it wants %s%d)", args[cmd->max_args],
                     cmd->max_args == cmd->min_args ? "" : "at most ", cmd->max_args);
}

/* A user name or a numeric uid. */
static int parse_owner(const char *s, uid_t *out)
{
    const struct passwd *pw = getpwnam(s);
    uint32_t uid;

    if (pw != NULL) {
        *out = pw->pw_uid;
        return 0;
    }
    if (cli_parse_u32(s, &uid) != 0 || uid == (uint32_t)-1)
        return -1;
    *out = (uid_t)uid;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "instance", required_argument, NULL, 'i' },
        { "socket", required_argument, NULL, 's' },
        { "json", no_argument, NULL, 'j' },
        { "owner", required_argument, NULL, 'o' },
        { "timeout", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    static cli_t cli = { .instance = "default", .owner = (uid_t)-1, .timeout_s = 10 };
    int opt;

    while ((opt = getopt_long(argc, argv, "+i:s:jo:t:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'i': cli.instance = optarg; cli.instance_set = 1; break;
        case 's': cli.socket = optarg; break;
        case 'j': cli.json = 1; break;
        case 'o':
            if (parse_owner(optarg, &cli.owner) != 0) {
                fprintf(stderr, "ringbloom: --owner: no user '%s'\n", optarg);
                return EX_USAGE;
            }
            break;
        case 't':
            if (cli_parse_u32(optarg, &cli.timeout_s) != 0 || cli.timeout_s == 0 ||
                cli.timeout_s > 86400) {
                fprintf(stderr, "ringbloom: --timeout wants seconds in [1, 86400]\n");
                return EX_USAGE;
            }
            break;
        case 'h': usage(stdout); return EX_YES;
        case 'V': printf("ringbloom %s\n", PACKAGE_VERSION); return EX_YES;
        default: /* getopt said which option */
            fprintf(stderr, "ringbloom: %s\n", MORE);
            return EX_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "ringbloom: missing COMMAND (%s)\n", MORE);
        return EX_USAGE;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        const struct command *cmd = &commands[i];
        int nargs = argc - optind - 1, ex;

        if (strcmp(argv[optind], cmd->name) != 0)
            continue;
        if (nargs < cmd->min_args || (cmd->max_args != ANY && nargs > cmd->max_args))
            ex = count_error(cmd, argv + optind + 1, nargs);
        else
            ex = cmd->fn(&cli, argc - optind, argv + optind);
        if (ex != CLI_USAGE)
            return ex;
        fprintf(stderr, "usage:\n%s(%s)\n", cmd->help, MORE);
        return EX_USAGE;
    }
    fprintf(stderr, "ringbloom: unknown command '%s' (%s)\n", argv[optind], MORE);
    return EX_USAGE;
}
