/* Map idioms shared by the programs. */
#ifndef WEFT_MAPUTIL_H
#define WEFT_MAPUTIL_H

#include <bpf/bpf_helpers.h>

/* Deletes key from a hash map when it is there. A lookup takes no lock;
 * a delete takes the bucket's, even for a key that is missing: for keys
 * that are mostly absent. */
#define delete_present(map, key)                          \
	do {                                              \
		if (bpf_map_lookup_elem(map, key))        \
			bpf_map_delete_elem(map, key);    \
	} while (0)

#endif
