#pragma once
#include <string>
std::string shout(const std::string &s);
