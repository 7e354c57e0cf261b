#include "strings.h"
#include <cctype>
std::string shout(const std::string &s) {
    std::string out = s;
    for (std::size_t i = 1; i < out.size(); ++i) out[i] = std::toupper(static_cast<unsigned char>(out[i]));
    return out + "!";
}
