/* Names of the event actions, and pool ids as text. */
#include "common/event.h"

#include <stdio.h>
#include <string.h>

static const char *const action_names[MS_ACT_COUNT] = {
#define XX(name, val, str) [val] = str,
        MS_ACTION_MAP(XX)
#undef XX
};

const char *ms_action_name(unsigned action)
{
	return action < MS_ACT_COUNT ? action_names[action] : NULL;
}

int ms_action_parse(const char *s, size_t n)
{
	int i;

	for (i = 0; i < MS_ACT_COUNT; i++)
		if (strlen(action_names[i]) == n && memcmp(action_names[i], s, n) == 0)
			return i;
	return -1;
}

const char *ms_pool_id_text(const uint64_t id[2], char *buf, size_t cap)
{
	snprintf(buf, cap, "(%llu, %llu)", (unsigned long long)id[0], (unsigned long long)id[1]);
	return buf;
}
