/*
 * The subcommands. To add one:
 *   1. write cli/cmd_<name>.c with a static usage[], a static option table
 *      and int cmd_<name>(int argc, const char **argv);
 *   2. declare it below;
 *   3. add a row to commands[] in cli/main.c (and the file to cli/CMakeLists.txt).
 */
#ifndef MEMSNAP_CLI_CMDS_H
#define MEMSNAP_CLI_CMDS_H

int cmd_check(int argc, const char **argv);
int cmd_convert(int argc, const char **argv);
int cmd_diff(int argc, const char **argv);
int cmd_explain(int argc, const char **argv);
int cmd_help(int argc, const char **argv);
int cmd_info(int argc, const char **argv);
int cmd_mcp(int argc, const char **argv);
int cmd_record(int argc, const char **argv);
int cmd_render(int argc, const char **argv);
int cmd_replay(int argc, const char **argv);
int cmd_stats(int argc, const char **argv);
int cmd_verify(int argc, const char **argv);
int cmd_whatif(int argc, const char **argv);
int cmd_version(int argc, const char **argv);

#endif
