/* SPDX-License-Identifier: MIT */
/*
 * locate: which stepscoped the CLI talks to. Every command reaches one daemon, named by one
 * setting: its socket (--socket, else $STEPSCOPE_SOCKET) or its HTTP address (--http, else
 * $STEPSCOPE_HTTP). The address a command needs and was not given is asked from that daemon: the
 * socket answers a probe hello with the HTTP address (docs/PROTOCOL.md section 1), and
 * /api/v1/health names the socket. Given both, they are checked to be the same daemon (the same
 * instance, or, where the socket cannot be opened, the socket the HTTP side names) and refused
 * otherwise. Given neither, the daemon on the default socket is the one; with none there, the
 * HTTP commands use the default HTTP address. cli/README.md ("Which daemon")
 * says the same for users.
 */
#ifndef STEPSCOPE_IMPORT_LOCATE_H
#define STEPSCOPE_IMPORT_LOCATE_H

#include "http_client.h"

#define LOCATE_TIMEOUT_MS 5000 /* a probe with no answer fails after this */

/* The usage lines of --socket and --http, for the commands that use the HTTP API. */
#define LOCATE_HELP                                                                                \
    "  --socket PATH           the daemon, by its socket (env STEPSCOPE_SOCKET)\n"                 \
    "  --http ADDR:PORT        or by its HTTP address (env STEPSCOPE_HTTP; ADDR may be\n"          \
    "                          localhost). One names the daemon and the other is asked\n"         \
    "                          from it; both must name the same daemon. Neither: the\n"           \
    "                          daemon on the default socket ($XDG_RUNTIME_DIR/stepscope.sock,\n"  \
    "                          else /tmp/stepscope-$UID.sock), else 127.0.0.1:8080\n"

enum locate_need {
    LOCATE_HTTP = 1,   /* the command uses the HTTP API */
    LOCATE_SOCKET = 2, /* the command sends over the socket */
};

/* Fills *ret (the HTTP address and token as hclient_target() reads them, and the socket) for a
 * command that needs the addresses in need (enum locate_need), from the flags in o (NULL members:
 * not given) and envp. Returns 0; -EINVAL when an option or variable is malformed or the two
 * addresses given are two different daemons (err says which, and what to do: exit status 2);
 * another negative errno when the daemon cannot be reached to ask for the address it lacks
 * (exit status 1). */
int locate_daemon(struct hclient_target *ret, char *const *envp, const struct hclient_options *o,
                  unsigned need, char *err);

/* The value of the string member key of the JSON object text[0, len) as this daemon writes it
 * (no blanks around ':'), unescaped into out (size bytes, NUL-terminated). Returns 0; -ENOENT
 * when absent; -EPROTO for a value that is not a plain string (a \u escape past ASCII or NUL);
 * -ENAMETOOLONG when it does not fit. */
int locate_json_string(const char *text, size_t len, const char *key, char *out, size_t size);

#endif
