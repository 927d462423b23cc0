/* api/api.h: the /v1 door of `codecell serve` (docs/API.md) and the
 * playground it serves at "/": sessions, execution, files, tools,
 * approvals, changes, the agent.  It registers with the transport
 * (http/door.h) through api_door. */
#ifndef CODECELL_API_API_H
#define CODECELL_API_API_H

#include "http/door.h"

extern const struct http_door api_door;

#endif
