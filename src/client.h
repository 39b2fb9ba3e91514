/* client.h - client internals shared with tests and the benchmark
 * (internal). */
#ifndef HR_CLIENT_H
#define HR_CLIENT_H

#include "hashring.h"
#include "publish.h"

/* The publisher the client's lookups read from.  Lets a test or the
 * benchmark publish rings of its own through the very path lookups take
 * (with no etcd reachable the watcher never publishes). */
hr__publisher *hr__client_publisher(hr_client *c);

#endif
