// The C face of toml++: parse, then walk the tree and hand each table and
// value to the caller with its line.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

#include "obscura_toml.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace {

bool is_bare(std::string_view key)
{
    if (key.empty())
        return false;
    for (char c : key)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    return true;
}

std::string segment(std::string_view key)
{
    if (is_bare(key))
        return std::string(key);
    std::string quoted = "\"";
    for (char c : key) {
        if (c == '"' || c == '\\')
            quoted += '\\';
        quoted += c;
    }
    return quoted + "\"";
}

struct Walker {
    ot_visit visit;
    void *context;

    void emit(int kind, const std::string &key, const toml::node &node)
    {
        ot_event e{};
        e.kind = kind;
        e.key = key.c_str();
        e.line = (int)node.source().begin.line;
        visit(context, &e);
    }

    void unsupported(const std::string &key, const toml::node &node, const char *what)
    {
        ot_event e{};
        e.kind = OT_UNSUPPORTED;
        e.key = key.c_str();
        e.string = what;
        e.string_length = strlen(what);
        e.line = (int)node.source().begin.line;
        visit(context, &e);
    }

    void table(const toml::table &t, const std::string &key)
    {
        if (!key.empty())
            emit(OT_TABLE, key, t);
        for (auto &&[k, v] : t)
            node(v, key.empty() ? segment(k.str()) : key + "." + segment(k.str()), false);
    }

    void node(const toml::node &n, const std::string &key, bool in_array)
    {
        ot_event e{};
        e.key = key.c_str();
        e.line = (int)n.source().begin.line;
        switch (n.type()) {
        case toml::node_type::table:
            if (in_array)
                unsupported(key, n, "a table inside an array");
            else
                table(*n.as_table(), key);
            return;
        case toml::node_type::array: {
            const toml::array &a = *n.as_array();
            if (!a.empty() && a.is_array_of_tables()) {
                unsupported(key, n, "an array of tables");
                return;
            }
            emit(OT_ARRAY_BEGIN, key, n);
            for (const toml::node &element : a)
                node(element, key, true);
            emit(OT_ARRAY_END, key, n);
            return;
        }
        case toml::node_type::string: {
            const std::string &s = n.as_string()->get();
            e.kind = OT_STRING;
            e.string = s.data();
            e.string_length = s.size();
            break;
        }
        case toml::node_type::integer:
            e.kind = OT_INTEGER;
            e.integer = n.as_integer()->get();
            break;
        case toml::node_type::floating_point:
            e.kind = OT_FLOAT;
            e.number = n.as_floating_point()->get();
            break;
        case toml::node_type::boolean:
            e.kind = OT_BOOL;
            e.boolean = n.as_boolean()->get() ? 1 : 0;
            break;
        case toml::node_type::date:
        case toml::node_type::time:
        case toml::node_type::date_time:
            unsupported(key, n, "a date or time");
            return;
        default:
            unsupported(key, n, "a value of an unknown kind");
            return;
        }
        visit(context, &e);
    }
};

} // namespace

extern "C" {

int ot_version(void)
{
    return TOML_LIB_MAJOR * 10000 + TOML_LIB_MINOR * 100 + TOML_LIB_PATCH;
}

int ot_parse(const char *text, size_t length, ot_visit visit, void *context,
             char *err, size_t errlen, int *line, int *column)
{
    toml::parse_result result = toml::parse(std::string_view(text, length));
    if (!result) {
        const toml::parse_error &error = result.error();
        if (errlen > 0)
            snprintf(err, errlen, "%.*s", (int)error.description().size(), error.description().data());
        *line = (int)error.source().begin.line;
        *column = (int)error.source().begin.column;
        return -1;
    }
    Walker walker{visit, context};
    walker.table(result.table(), "");
    return 0;
}

} // extern "C"
