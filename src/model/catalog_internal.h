// The catalog loader's pieces: catalog_read.cpp reads one playbook's steps;
// catalog_graph.cpp (Catalog::CheckGraph) checks ids and dependencies across
// all of them; catalog.cpp puts them together.
#pragma once

#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/yaml_source.h"

namespace gpuctl::detail {

// Appends the steps of one playbook to `out`, and its `drain:` block to
// `drains`, reporting what is wrong in it.
void ReadPlaybook(yaml::Source& source, const YAML::Node& root, std::vector<Step>& out,
                  std::vector<Drain>& drains);

// "has_gpus" for StepCondition::kHasGpus, and the way back.
std::string_view ConditionName(StepCondition condition);
const std::vector<std::string>& ConditionNames();

}  // namespace gpuctl::detail
