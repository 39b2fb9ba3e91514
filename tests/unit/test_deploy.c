/* test_deploy.c - the deploy files parse, and the real CLI accepts every
 * hashring command they run.
 *
 * No Docker engine or systemd instance runs here, so this is what can be
 * checked without one:
 *   - docker-compose.yml is YAML (Debian's python3-yaml reads it) with three
 *     etcd members forming one cluster, one `hashring watch` and two
 *     `hashring register` services built from deploy/Dockerfile;
 *   - deploy/Dockerfile is well formed: known instructions, multi-stage,
 *     Debian 12 bases, JSON-form commands, the build packages of
 *     deploy/install-deps.sh, and a runtime package for each shared library
 *     the CLI links;
 *   - deploy/hashring-register.service has its sections and stop settings,
 *     and its ExecStart, expanded with deploy/hashring-register.env as
 *     systemd would, is a valid command;
 *   - every hashring command above passes the CLI's own parser
 *     (`hashring CMD ARGS... --help` exits 0 only if each option and value
 *     was accepted), each option and ETCDCTL_* variable is documented in
 *     `hashring CMD --help`, and each subcommand and option is one that the
 *     integration tests (tests/integration) run against a real etcd. */
#define _GNU_SOURCE
#include "hrt_check.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROOT HR_TEST_DATA_DIR "/.."
#define PYTHON "/usr/bin/python3"
#define MAX_WORDS 128
#define RUN_TIMEOUT_S 20

/* ---- small helpers -------------------------------------------------------- */

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Runs argv (argv[0] a path); stdout and stderr go to *out (malloc'd).
 * Returns the exit status, or -1 when killed or timed out. */
static int run(char *const argv[], char **out)
{
	FILE *tmp = tmpfile();
	time_t until = time(NULL) + RUN_TIMEOUT_S;
	int st = 0, status = -1;
	long n;
	pid_t pid;

	ck_assert_ptr_nonnull(tmp);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fileno(tmp), 1);
		dup2(fileno(tmp), 2);
		execv(argv[0], argv);
		_exit(127);
	}
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid) {
			if (WIFEXITED(st))
				status = WEXITSTATUS(st);
			break;
		}
		if (time(NULL) > until) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(5000);
	}
	fseek(tmp, 0, SEEK_END);
	n = ftell(tmp);
	rewind(tmp);
	*out = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(*out);
	(*out)[fread(*out, 1, (size_t)n, tmp)] = '\0';
	fclose(tmp);
	return status;
}

/* All tests/integration/test_*.c sources, concatenated. */
static char *integration_sources(void)
{
	DIR *d = opendir(HR_TEST_DATA_DIR "/integration");
	struct dirent *de;
	char *all = strdup("");

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[1024], *text, *joined;

		if (strncmp(de->d_name, "test_", 5) || len < 3 || strcmp(de->d_name + len - 2, ".c"))
			continue;
		snprintf(path, sizeof path, HR_TEST_DATA_DIR "/integration/%s", de->d_name);
		text = read_file(path);
		ck_assert_int_ge(asprintf(&joined, "%s\n%s", all, text), 0);
		free(all);
		free(text);
		all = joined;
	}
	closedir(d);
	return all;
}

/* ---- the CLI check shared by every deploy file ----------------------------- */

/* True when the help text lists option opt[0..len) ("  --name ARG  text"
 * or a flag alone on its line). */
static int help_lists(const char *help, const char *opt, size_t len)
{
	for (const char *p = help; (p = memmem(p, strlen(p), opt, len)); p++)
		if (p - help >= 2 && !strncmp(p - 2, "  ", 2) &&
		    (p[len] == ' ' || p[len] == '\n'))
			return 1;
	return 0;
}

/*
 * argv[0..argc) is a hashring command line as a deploy file runs it
 * (argv[0] "hashring" or a path ending in "/hashring").  `env_names` are
 * the variables the file gives it (NULL-terminated; may be NULL).
 */
static void check_cli_command(const char *where, char **argv, int argc,
			      const char *const *env_names)
{
	char *help_argv[] = { (char *)HR_CLI_PATH, argv[1], (char *)"--help", NULL };
	char *full[MAX_WORDS + 2];
	char *help, *out, *tests;
	const char *base = strrchr(argv[0], '/');
	char needle[128];

	ck_assert_msg(argc >= 2, "%s: no subcommand", where);
	ck_assert_msg(!strcmp(base ? base + 1 : argv[0], "hashring"),
		      "%s: runs %s, not hashring", where, argv[0]);
	ck_assert_msg(run(help_argv, &help) == 0, "%s: hashring %s --help failed: %s",
		      where, argv[1], help);
	tests = integration_sources();
	snprintf(needle, sizeof needle, "\"%s\"", argv[1]);
	ck_assert_msg(strstr(tests, needle), "%s: no integration test runs `hashring %s`",
		      where, argv[1]);

	for (int i = 2; i < argc; i++) {
		size_t len;

		if (strncmp(argv[i], "--", 2))
			continue;
		len = strcspn(argv[i], "=");
		ck_assert_msg(help_lists(help, argv[i], len),
			      "%s: `hashring %s --help` does not list %.*s", where, argv[1],
			      (int)len, argv[i]);
		snprintf(needle, sizeof needle, "\"%.*s\"", (int)len, argv[i]);
		ck_assert_msg(strstr(tests, needle), "%s: no integration test passes %.*s",
			      where, (int)len, argv[i]);
	}
	for (int i = 0; env_names && env_names[i]; i++) {
		if (strncmp(env_names[i], "ETCDCTL_", 8))
			continue;
		snprintf(needle, sizeof needle, "$%s", env_names[i]);
		ck_assert_msg(strstr(help, needle), "%s: hashring %s does not read %s",
			      where, argv[1], env_names[i]);
	}

	/* The parser itself: each option and value is checked as it comes,
	 * so --help at the end exits 0 only if all of them were accepted. */
	ck_assert_int_le(argc, MAX_WORDS);
	full[0] = (char *)HR_CLI_PATH;
	for (int i = 1; i < argc; i++)
		full[i] = argv[i];
	full[argc] = (char *)"--help";
	full[argc + 1] = NULL;
	ck_assert_msg(run(full, &out) == 0, "%s: the CLI rejects its command: %s", where, out);
	free(out);
	free(help);
	free(tests);
}

/* The value after `opt` in argv ("--opt V" or "--opt=V"), or NULL. */
static const char *option_value(char **argv, int argc, const char *opt)
{
	size_t len = strlen(opt);

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], opt) && i + 1 < argc)
			return argv[i + 1];
		if (!strncmp(argv[i], opt, len) && argv[i][len] == '=')
			return argv[i] + len + 1;
	}
	return NULL;
}

/* "20s", "1m30s" or "40" (seconds) in seconds; -1 if not understood. */
static long duration_s(const char *s)
{
	long total = 0;

	if (!s || !*s)
		return -1;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 0)
			return -1;
		if (*end == 'm' && end[1] != 's')
			v *= 60, end++;
		else if (*end == 'h')
			v *= 3600, end++;
		else if (*end == 's')
			end++;
		else if (*end)
			return -1;
		total += v;
		s = end;
	}
	return total;
}

/* ---- docker-compose.yml --------------------------------------------------- */

static cJSON *load_compose(void)
{
	static const char script[] =
		"import json, sys, yaml\n"
		"with open(sys.argv[1]) as f:\n"
		"    print(json.dumps(yaml.safe_load(f)))\n";
	char *argv[] = { (char *)PYTHON, (char *)"-c", (char *)script,
			 (char *)ROOT "/docker-compose.yml", NULL };
	char *out;
	cJSON *doc;

	ck_assert_msg(run(argv, &out) == 0, "docker-compose.yml is not valid YAML: %s", out);
	doc = cJSON_Parse(out);
	ck_assert_msg(cJSON_IsObject(doc), "compose file is not a mapping: %s", out);
	free(out);
	return doc;
}

/* A service's command as a word array (list form, or a string split on
 * blanks); returns argc. */
static int service_command(const cJSON *svc, char **argv)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(svc, "command"), *it;
	int argc = 0;

	if (cJSON_IsString(cmd)) {
		char *copy = strdup(cmd->valuestring), *save = NULL;
		for (char *w = strtok_r(copy, " \t", &save); w && argc < MAX_WORDS;
		     w = strtok_r(NULL, " \t", &save))
			argv[argc++] = strdup(w);
		free(copy);
		return argc;
	}
	cJSON_ArrayForEach(it, cmd) {
		ck_assert_msg(cJSON_IsString(it), "%s: command items must be strings", svc->string);
		ck_assert_int_lt(argc, MAX_WORDS);
		argv[argc++] = strdup(it->valuestring);
	}
	return argc;
}

static void free_words(char **argv, int argc)
{
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

/* A service's environment (mapping or list of NAME=VALUE) value. */
static const char *service_env(const cJSON *svc, const char *name)
{
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(svc, "environment"), *it;
	size_t len = strlen(name);

	if (cJSON_IsObject(env)) {
		it = cJSON_GetObjectItemCaseSensitive(env, name);
		return cJSON_IsString(it) ? it->valuestring : NULL;
	}
	cJSON_ArrayForEach(it, env)
		if (cJSON_IsString(it) && !strncmp(it->valuestring, name, len) &&
		    it->valuestring[len] == '=')
			return it->valuestring + len + 1;
	return NULL;
}

/* The names of a service's variables into names[] (NULL-terminated). */
static void env_names(const cJSON *svc, char buf[][64], const char **names, int max)
{
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(svc, "environment"), *it;
	int n = 0;

	cJSON_ArrayForEach(it, env) {
		const char *s = cJSON_IsObject(env) ? it->string : it->valuestring;

		if (!s || n == max)
			continue;
		snprintf(buf[n], 64, "%.*s", (int)strcspn(s, "="), s);
		names[n] = buf[n];
		n++;
	}
	names[n] = NULL;
}

/* True when depends_on (mapping or list) names `service`. */
static int depends_on(const cJSON *deps, const char *service)
{
	const cJSON *it;

	if (cJSON_IsObject(deps))
		return cJSON_HasObjectItem(deps, service);
	cJSON_ArrayForEach(it, deps)
		if (cJSON_IsString(it) && !strcmp(it->valuestring, service))
			return 1;
	return 0;
}

/* The etcd setting `flag` (e.g. "initial-cluster") of a member, from its
 * command line or its ETCD_* variable. */
static const char *etcd_setting(const cJSON *svc, char **argv, int argc, const char *flag)
{
	char opt[64], var[64];
	const char *v;

	snprintf(opt, sizeof opt, "--%s", flag);
	v = option_value(argv, argc, opt);
	if (v)
		return v;
	snprintf(var, sizeof var, "ETCD_%s", flag);
	for (char *p = var; *p; p++)
		*p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
	return service_env(svc, var);
}

START_TEST(compose_file)
{
	cJSON *doc = load_compose();
	const cJSON *services = cJSON_GetObjectItemCaseSensitive(doc, "services"), *svc;
	char etcd_names[8][64], cluster[512] = "", prefix[256] = "", ids[2][64];
	int n_etcd = 0, n_watch = 0, n_register = 0;

	ck_assert_msg(cJSON_IsObject(services), "no services mapping");
	cJSON_ArrayForEach(svc, services) {
		const cJSON *image = cJSON_GetObjectItemCaseSensitive(svc, "image");
		char *argv[MAX_WORDS];
		int argc = service_command(svc, argv);
		const char *prog = argc ? strrchr(argv[0], '/') : NULL;

		ck_assert_msg(argc > 0, "service %s has no command", svc->string);
		prog = prog ? prog + 1 : argv[0];
		if (!strcmp(prog, "etcd")) {
			const char *name = etcd_setting(svc, argv, argc, "name");
			const char *ic = etcd_setting(svc, argv, argc, "initial-cluster");
			const char *adv = etcd_setting(svc, argv, argc, "advertise-client-urls");

			/* Debian 12's etcd version, as the tests use. */
			ck_assert_msg(cJSON_IsString(image) && strstr(image->valuestring, "etcd:v3.4.23"),
				      "%s: not etcd 3.4.23", svc->string);
			ck_assert_msg(name && !strcmp(name, svc->string),
				      "%s: member name differs from the service name", svc->string);
			ck_assert_msg(ic, "%s: no initial cluster", svc->string);
			if (!cluster[0])
				snprintf(cluster, sizeof cluster, "%s", ic);
			ck_assert_str_eq(ic, cluster);
			ck_assert_msg(adv && strstr(adv, svc->string), "%s: advertises %s", svc->string,
				      adv ? adv : "nothing");
			ck_assert_int_lt(n_etcd, 8);
			snprintf(etcd_names[n_etcd++], sizeof etcd_names[0], "%s", svc->string);
		} else {
			const cJSON *build = cJSON_GetObjectItemCaseSensitive(svc, "build");
			const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(build, "context");
			const cJSON *df = cJSON_GetObjectItemCaseSensitive(build, "dockerfile");
			const cJSON *deps = cJSON_GetObjectItemCaseSensitive(svc, "depends_on");
			char names_buf[32][64];
			const char *names[33];
			const char *p, *eps;
			char path[1024], where[128];

			snprintf(where, sizeof where, "docker-compose.yml service %s", svc->string);
			ck_assert_msg(cJSON_IsString(ctx) && cJSON_IsString(df) &&
				      !strcmp(df->valuestring, "deploy/Dockerfile"),
				      "%s: not built from deploy/Dockerfile", where);
			snprintf(path, sizeof path, ROOT "/%s/%s", ctx->valuestring, df->valuestring);
			ck_assert_msg(file_exists(path), "%s: %s missing", where, path);
			env_names(svc, names_buf, names, 32);
			check_cli_command(where, argv, argc, names);

			/* Every hashring service shares one ring: same prefix. */
			p = option_value(argv, argc, "--prefix");
			ck_assert_msg(p, "%s: no --prefix", where);
			if (!prefix[0])
				snprintf(prefix, sizeof prefix, "%s", p);
			ck_assert_str_eq(p, prefix);
			/* ...and the etcd members of this file, started first. */
			eps = option_value(argv, argc, "--endpoints");
			if (!eps)
				eps = service_env(svc, "ETCDCTL_ENDPOINTS");
			ck_assert_msg(eps, "%s: no endpoints", where);
			for (int k = 0; k < n_etcd; k++) {
				char url[128];
				snprintf(url, sizeof url, "http://%.63s:2379", etcd_names[k]);
				ck_assert_msg(strstr(eps, url), "%s: endpoints lack %s", where, url);
				ck_assert_msg(depends_on(deps, etcd_names[k]),
					      "%s: does not depend on %s", where, etcd_names[k]);
			}

			if (!strcmp(argv[1], "watch")) {
				n_watch++;
			} else if (!strcmp(argv[1], "register")) {
				const char *id = option_value(argv, argc, "--id");
				const char *drain = option_value(argv, argc, "--drain-seconds");
				const cJSON *grace = cJSON_GetObjectItemCaseSensitive(svc,
										      "stop_grace_period");
				const cJSON *sig = cJSON_GetObjectItemCaseSensitive(svc, "stop_signal");

				ck_assert_msg(id, "%s: no --id", where);
				ck_assert_int_lt(n_register, 2);
				for (int k = 0; k < n_register; k++)
					ck_assert_str_ne(ids[k], id);
				snprintf(ids[n_register++], sizeof ids[0], "%s", id);
				/* docker stop must let the drain finish. */
				ck_assert_msg(!sig || !strcmp(sig->valuestring, "SIGTERM"),
					      "%s: stop_signal is not SIGTERM", where);
				ck_assert_msg(cJSON_IsString(grace) &&
					      duration_s(grace->valuestring) >
						      (drain ? atol(drain) : 0) + 2,
					      "%s: stop_grace_period too short for the drain", where);
			} else {
				ck_abort_msg("%s: runs hashring %s", where, argv[1]);
			}
		}
		free_words(argv, argc);
	}
	ck_assert_int_eq(n_etcd, 3);
	ck_assert_int_eq(n_watch, 1);
	ck_assert_int_eq(n_register, 2);
	/* One cluster of exactly these three members. */
	for (int k = 0; k < n_etcd; k++) {
		char member[160];
		snprintf(member, sizeof member, "%.63s=http://%.63s:2380", etcd_names[k],
			 etcd_names[k]);
		ck_assert_msg(strstr(cluster, member), "initial cluster lacks %s", member);
	}
	{
		int commas = 0;
		for (const char *p = cluster; *p; p++)
			commas += *p == ',';
		ck_assert_int_eq(commas, n_etcd - 1);
	}
	cJSON_Delete(doc);
}
END_TEST

/* ---- deploy/Dockerfile ---------------------------------------------------- */

struct instr {
	char keyword[16];
	char *args;       /* continuation lines joined, comments removed */
	int stage;        /* index of the FROM it belongs to; -1 before  */
};

/* Splits a Dockerfile into instructions; returns their count. */
static int parse_dockerfile(char *text, struct instr *out, int max)
{
	int n = 0, stage = -1;
	char *save = NULL, *cur = NULL;

	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line;
		size_t len;
		int cont;

		while (isspace((unsigned char)*p))
			p++;
		if (*p == '#' || !*p)
			continue;
		len = strlen(p);
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		cont = len && p[len - 1] == '\\';
		if (cont)
			len--;
		p[len] = '\0';
		if (!cur) {
			ck_assert_int_lt(n, max);
			cur = strdup(p);
		} else {
			char *joined;
			ck_assert_int_ge(asprintf(&joined, "%s %s", cur, p), 0);
			free(cur);
			cur = joined;
		}
		if (cont)
			continue;
		{
			char *args = cur + strcspn(cur, " \t");
			size_t kl = (size_t)(args - cur);

			ck_assert_msg(kl > 0 && kl < sizeof out[n].keyword, "bad line: %s", cur);
			memcpy(out[n].keyword, cur, kl);
			out[n].keyword[kl] = '\0';
			for (char *k = out[n].keyword; *k; k++)
				*k = (char)toupper((unsigned char)*k);
			while (isspace((unsigned char)*args))
				args++;
			out[n].args = strdup(args);
			if (!strcmp(out[n].keyword, "FROM"))
				stage++;
			out[n].stage = stage;
			n++;
			free(cur);
			cur = NULL;
		}
	}
	ck_assert_msg(cur == NULL, "Dockerfile ends inside a continued line");
	return n;
}

/* True when `word` is one of the blank-separated words of `s`. */
static int has_word(const char *s, const char *word)
{
	size_t len = strlen(word);

	for (const char *p = s; (p = strstr(p, word)); p += len)
		if ((p == s || isspace((unsigned char)p[-1])) &&
		    (!p[len] || isspace((unsigned char)p[len])))
			return 1;
	return 0;
}

/* The Debian package that ships shared library `soname`, into pkg. */
static int package_of(const char *soname, char *pkg, size_t len)
{
	char pattern[256];
	char *argv[] = { (char *)"/usr/bin/dpkg", (char *)"-S", pattern, NULL };
	char *out;
	int rc;

	snprintf(pattern, sizeof pattern, "*/%s", soname);
	rc = run(argv, &out);
	if (rc == 0)
		snprintf(pkg, len, "%.*s", (int)strcspn(out, ":"), out);
	free(out);
	return rc;
}

START_TEST(dockerfile)
{
	static const char *const known[] = { "FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV",
		"ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD",
		"STOPSIGNAL", "HEALTHCHECK", "SHELL", NULL };
	char *text = read_file(ROOT "/deploy/Dockerfile");
	char *deps = read_file(ROOT "/deploy/install-deps.sh");
	struct instr in[256];
	char stages[8][64] = { { 0 } }, args_before[512] = "", build_runs[4096] = "",
	     final_runs[4096] = "";
	const char *cmd_args = NULL;
	int n = parse_dockerfile(text, in, 256), n_stages = 0, copies_from_build = 0;
	int last;

	ck_assert_int_gt(n, 0);
	ck_assert_msg(!strcmp(in[0].keyword, "FROM") || !strcmp(in[0].keyword, "ARG"),
		      "a Dockerfile starts with FROM or ARG, not %s", in[0].keyword);
	for (int i = 0; i < n; i++) {
		int ok = 0;

		for (int k = 0; known[k]; k++)
			ok |= !strcmp(in[i].keyword, known[k]);
		ck_assert_msg(ok, "unknown instruction %s", in[i].keyword);
		ck_assert_msg(in[i].args[0] != '\0', "%s without arguments", in[i].keyword);
		if (in[i].stage < 0) {
			ck_assert_str_eq(in[i].keyword, "ARG");
			strncat(args_before, in[i].args, sizeof args_before - strlen(args_before) - 2);
			strcat(args_before, " ");
		}
	}
	last = in[n - 1].stage;
	ck_assert_msg(last >= 1, "not a multi-stage build");

	for (int i = 0; i < n; i++) {
		const char *kw = in[i].keyword, *a = in[i].args;

		if (!strcmp(kw, "FROM")) {
			char image[256], as[8] = "", name[64] = "";
			int words = sscanf(a, "%255s %7s %63s", image, as, name);

			/* ${NAME} images come from the ARGs before the first FROM. */
			if (!strncmp(image, "${", 2)) {
				char var[64], *v;
				snprintf(var, sizeof var, "%.*s=", (int)strcspn(image + 2, "}"), image + 2);
				v = strstr(args_before, var);
				ck_assert_msg(v, "FROM %s: no ARG default", image);
				snprintf(image, sizeof image, "%.*s", (int)strcspn(v + strlen(var), " "),
					 v + strlen(var));
			}
			ck_assert_msg(!strncmp(image, "debian:12", 9) ||
				      !strncmp(image, "debian:bookworm", 15),
				      "stage %d is not Debian 12: %s", in[i].stage, image);
			if (words == 3) {
				ck_assert_msg(!strcasecmp(as, "AS"), "FROM %s", a);
				snprintf(stages[in[i].stage], sizeof stages[0], "%s", name);
			}
			n_stages++;
		} else if (!strcmp(kw, "COPY") && !strncmp(a, "--from=", 7)) {
			int found = 0;
			size_t len = strcspn(a + 7, " ");
			for (int s = 0; s < in[i].stage; s++)
				found |= strlen(stages[s]) == len && !strncmp(stages[s], a + 7, len);
			ck_assert_msg(found, "COPY %s: no earlier stage of that name", a);
			copies_from_build += in[i].stage == last;
		} else if (!strcmp(kw, "RUN")) {
			char *runs = in[i].stage == last ? final_runs : build_runs;
			strncat(runs, a, 4096 - strlen(runs) - 2);
			strcat(runs, " ");
		} else if (!strcmp(kw, "CMD") || !strcmp(kw, "ENTRYPOINT") ||
			   !strcmp(kw, "SHELL")) {
			cJSON *arr = cJSON_Parse(a), *it;
			if (a[0] == '[' || !strcmp(kw, "SHELL")) {
				ck_assert_msg(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) > 0,
					      "%s: not a JSON array: %s", kw, a);
				cJSON_ArrayForEach(it, arr)
					ck_assert(cJSON_IsString(it));
			}
			if (!strcmp(kw, "CMD") && in[i].stage == last)
				cmd_args = a;
			cJSON_Delete(arr);
		} else if (!strcmp(kw, "STOPSIGNAL")) {
			ck_assert_str_eq(a, "SIGTERM");
		}
	}
	ck_assert_int_eq(n_stages, last + 1);
	ck_assert_msg(copies_from_build > 0, "the runtime stage copies nothing from the build");
	ck_assert_msg(cmd_args && strstr(cmd_args, "\"hashring\""), "the image's CMD is not hashring");
	/* Built with Debian's packages only: apt-get, and no other fetcher. */
	ck_assert_ptr_nonnull(strstr(build_runs, "apt-get install"));
	ck_assert_ptr_nonnull(strstr(build_runs, "cmake --build"));
	ck_assert_ptr_null(strstr(build_runs, "curl "));
	ck_assert_ptr_null(strstr(build_runs, "wget "));
	ck_assert_ptr_null(strstr(build_runs, "git clone"));

	/* Every build package install-deps.sh names (its PACKAGES list,
	 * which ends at the line holding etcd-server), a -dev one or a tool. */
	{
		char *list = strstr(deps, "PACKAGES=\""), *end;
		ck_assert_ptr_nonnull(list);
		list += 10;
		end = strchr(list, '"');
		ck_assert_ptr_nonnull(end);
		*end = '\0';
		for (char *save = NULL, *w = strtok_r(list, " \t\n", &save); w;
		     w = strtok_r(NULL, " \t\n", &save)) {
			if (strstr(w, "-dev") || !strcmp(w, "cmake") || !strcmp(w, "pkg-config"))
				ck_assert_msg(has_word(build_runs, w),
					      "the build stage does not install %s", w);
		}
	}

	/* The runtime stage installs the package of each library the CLI
	 * needs (libc comes with the base image). */
	{
		char *argv[] = { (char *)"/usr/bin/readelf", (char *)"-d", (char *)HR_CLI_PATH, NULL };
		char *out, *p;
		int libs = 0;

		ck_assert_int_eq(run(argv, &out), 0);
		for (p = out; (p = strstr(p, "Shared library: [")); ) {
			char soname[128], pkg[128];

			p += 17;
			snprintf(soname, sizeof soname, "%.*s", (int)strcspn(p, "]"), p);
			if (!strncmp(soname, "libc.so", 7) || !strncmp(soname, "libm.so", 7) ||
			    !strncmp(soname, "ld-linux", 8) || !strncmp(soname, "libasan", 7) ||
			    !strncmp(soname, "libubsan", 8) || !strncmp(soname, "libtsan", 7))
				continue;
			ck_assert_msg(package_of(soname, pkg, sizeof pkg) == 0,
				      "no Debian package ships %s", soname);
			ck_assert_msg(has_word(final_runs, pkg),
				      "the runtime stage lacks %s (for %s)", pkg, soname);
			libs++;
		}
		ck_assert_int_gt(libs, 0);
		free(out);
	}
	for (int i = 0; i < n; i++)
		free(in[i].args);
	free(text);
	free(deps);
}
END_TEST

/* ---- deploy/hashring-register.service ------------------------------------- */

/* Loads NAME=VALUE lines (comments and blanks skipped) into a cJSON
 * object. */
static cJSON *load_env_file(const char *path)
{
	char *text = read_file(path), *save = NULL;
	cJSON *env = cJSON_CreateObject();

	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq;

		while (isspace((unsigned char)*line))
			line++;
		if (!*line || *line == '#')
			continue;
		eq = strchr(line, '=');
		ck_assert_msg(eq && eq > line, "%s: not NAME=VALUE: %s", path, line);
		*eq = '\0';
		ck_assert_msg(!cJSON_HasObjectItem(env, line), "%s: %s set twice", path, line);
		cJSON_AddStringToObject(env, line, eq + 1);
	}
	free(text);
	return env;
}

/* Expands ExecStart words as systemd does: "${V}" is one word, "$V" is
 * split on blanks (and vanishes when empty).  Unknown variables fail. */
static int expand_exec(const char *line, const cJSON *env, char **argv)
{
	char *copy = strdup(line), *save = NULL;
	int argc = 0;

	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (w[0] == '$' && w[1] == '{') {
			char name[128];
			const cJSON *v;
			size_t len = strcspn(w + 2, "}");

			ck_assert_msg(w[2 + len] == '}' && !w[3 + len], "ExecStart word %s", w);
			snprintf(name, sizeof name, "%.*s", (int)len, w + 2);
			v = cJSON_GetObjectItemCaseSensitive(env, name);
			ck_assert_msg(cJSON_IsString(v), "ExecStart uses %s, unset in the env file", name);
			argv[argc++] = strdup(v->valuestring);
		} else if (w[0] == '$') {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(env, w + 1);
			char *vals, *save2 = NULL;

			ck_assert_msg(cJSON_IsString(v), "ExecStart uses %s, unset in the env file", w + 1);
			vals = strdup(v->valuestring);
			for (char *x = strtok_r(vals, " \t", &save2); x; x = strtok_r(NULL, " \t", &save2))
				argv[argc++] = strdup(x);
			free(vals);
		} else {
			ck_assert_msg(!strchr(w, '$'), "ExecStart word %s", w);
			argv[argc++] = strdup(w);
		}
		ck_assert_int_lt(argc, MAX_WORDS);
	}
	free(copy);
	return argc;
}

START_TEST(systemd_unit)
{
	char *text = read_file(ROOT "/deploy/hashring-register.service"), *save = NULL;
	cJSON *unit = cJSON_CreateObject(), *section = NULL;
	cJSON *env = load_env_file(ROOT "/deploy/hashring-register.env");
	const cJSON *svc, *v, *e;
	char *argv[MAX_WORDS], *joined = NULL;
	const char *names[64];
	int argc, n_names = 0;
	long stop_s, drain_s;

	/* INI with backslash continuations; keys may repeat (kept last). */
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t len;

		while (isspace((unsigned char)*line))
			line++;
		if (!*line || *line == '#' || *line == ';')
			continue;
		len = strlen(line);
		if (joined) {
			char *t;
			ck_assert_int_ge(asprintf(&t, "%s %s", joined, line), 0);
			free(joined);
			joined = t;
		} else {
			joined = strdup(line);
		}
		len = strlen(joined);
		if (joined[len - 1] == '\\') {
			joined[len - 1] = ' ';
			continue;
		}
		if (joined[0] == '[') {
			ck_assert_msg(joined[len - 1] == ']', "bad section line %s", joined);
			joined[len - 1] = '\0';
			section = cJSON_AddObjectToObject(unit, joined + 1);
			ck_assert_ptr_nonnull(section);
		} else {
			char *eq = strchr(joined, '=');
			ck_assert_msg(section && eq, "not KEY=VALUE in a section: %s", joined);
			*eq = '\0';
			cJSON_DeleteItemFromObjectCaseSensitive(section, joined);
			cJSON_AddStringToObject(section, joined, eq + 1);
		}
		free(joined);
		joined = NULL;
	}
	ck_assert_msg(joined == NULL, "unit ends inside a continued line");
	ck_assert(cJSON_HasObjectItem(unit, "Unit"));
	ck_assert(cJSON_HasObjectItem(unit, "Install"));
	svc = cJSON_GetObjectItemCaseSensitive(unit, "Service");
	ck_assert_ptr_nonnull(svc);

	ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(svc, "EnvironmentFile"));
	v = cJSON_GetObjectItemCaseSensitive(svc, "KillSignal");
	ck_assert_msg(cJSON_IsString(v) && !strcmp(v->valuestring, "SIGTERM"), "KillSignal");
	v = cJSON_GetObjectItemCaseSensitive(svc, "Restart");
	ck_assert_msg(cJSON_IsString(v) && strcmp(v->valuestring, "no"), "no Restart=");
	v = cJSON_GetObjectItemCaseSensitive(svc, "ExecStart");
	ck_assert_ptr_nonnull(v);
	argc = expand_exec(v->valuestring, env, argv);
	ck_assert_str_eq(argv[1], "register");
	cJSON_ArrayForEach(e, env)
		if (n_names < 63)
			names[n_names++] = e->string;
	names[n_names] = NULL;
	check_cli_command("deploy/hashring-register.service", argv, argc, names);

	/* systemd must wait out the drain before its SIGKILL. */
	v = cJSON_GetObjectItemCaseSensitive(svc, "TimeoutStopSec");
	stop_s = cJSON_IsString(v) ? duration_s(v->valuestring) : -1;
	drain_s = duration_s(option_value(argv, argc, "--drain-seconds"));
	ck_assert_msg(drain_s >= 0, "no --drain-seconds");
	ck_assert_msg(stop_s > drain_s + 5, "TimeoutStopSec %ld s, drain %ld s", stop_s, drain_s);
	/* The endpoints come from the environment file, as etcdctl reads them. */
	ck_assert(cJSON_HasObjectItem(env, "ETCDCTL_ENDPOINTS") ||
		  option_value(argv, argc, "--endpoints"));

	free_words(argv, argc);
	cJSON_Delete(unit);
	cJSON_Delete(env);
	free(text);
}
END_TEST

/* The checker itself rejects what the CLI rejects. */
START_TEST(checker_rejects_bad_commands)
{
	char *bad_opt[] = { (char *)HR_CLI_PATH, (char *)"register", (char *)"--bogus",
			    (char *)"--help", NULL };
	char *bad_val[] = { (char *)HR_CLI_PATH, (char *)"register", (char *)"--ttl",
			    (char *)"1", (char *)"--help", NULL };
	char *out;

	ck_assert_int_eq(run(bad_opt, &out), 2);
	free(out);
	ck_assert_int_eq(run(bad_val, &out), 2);
	free(out);
	ck_assert_int_eq(duration_s("1m30s"), 90);
	ck_assert_int_eq(duration_s("20s"), 20);
	ck_assert_int_eq(duration_s("40"), 40);
	ck_assert_int_eq(duration_s("x"), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("deploy");
	TCase *tc = tcase_create("files");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, compose_file);
	tcase_add_test(tc, dockerfile);
	tcase_add_test(tc, systemd_unit);
	tcase_add_test(tc, checker_rejects_bad_commands);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
