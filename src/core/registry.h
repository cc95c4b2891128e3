// Registry<Entry>: the one way components are chosen by name (codecs, strategies, policies,
// predictors, links). An Entry is a plain struct with at least
//   std::string name;     // the spec name, lower case
//   std::string summary;  // one line for help texts
// plus its capability metadata as plain data fields (what it can do, what it needs) and a
// factory, typically std::function<std::unique_ptr<T>(SpecReader&, ...)>, that reads the
// entry's options from the spec (core/spec.h). Code elsewhere asks the entry for a capability
// instead of comparing its name.
//
// A registry is filled explicitly by a register_builtin_*() function (no static initialisers).
// add() and the lookups are thread-safe; entries live in a deque, so a reference returned by
// find() or at() stays valid while later entries are added.
#pragma once

#include <algorithm>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/spec.h"

namespace ferry {

template <class Entry>
class Registry {
 public:
  // `what` names the kind of entry in error messages ("codec", "--algo", "policy").
  explicit Registry(std::string what) : what_(std::move(what)) {}
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Throws InvalidArgument if the name is empty or already registered.
  void add(Entry entry) {
    std::lock_guard lock(mu_);
    FERRY_REQUIRE(!entry.name.empty(), what_, ": an entry without a name");
    FERRY_REQUIRE(find_locked(entry.name) == nullptr, what_, " '", entry.name,
                  "' registered twice");
    entries_.push_back(std::move(entry));
  }
  // Adds the entry unless one of that name exists; true if it was added. For idempotent
  // register_builtin_*() functions that may run more than once.
  bool add_if_absent(Entry entry) {
    std::lock_guard lock(mu_);
    if (find_locked(entry.name) != nullptr) return false;
    entries_.push_back(std::move(entry));
    return true;
  }
  // nullptr for an unknown name.
  const Entry* find(std::string_view name) const {
    std::lock_guard lock(mu_);
    return find_locked(name);
  }
  // Throws InvalidArgument "unknown <what> '<name>' (known: a, b, c)" for an unknown name.
  const Entry& at(std::string_view name) const {
    std::lock_guard lock(mu_);
    if (const Entry* e = find_locked(name)) return *e;
    FERRY_THROW(InvalidArgument, "unknown ", what_, " '", name, "' (known: ", known_locked(), ")");
  }
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  // Sorted, for help texts and error messages.
  std::vector<std::string> names() const {
    std::lock_guard lock(mu_);
    return names_locked();
  }
  // In registration order. The deque is not locked: call once registration is over.
  const std::deque<Entry>& entries() const { return entries_; }
  const std::string& what() const { return what_; }

  // Parses `text` as a spec of one of the entries: the entry (at(), so an unknown name throws)
  // and a reader over its options. The caller passes the reader to the entry's factory and then
  // calls reader.finish(), so that unknown keys are refused. An Entry with a field
  // `std::string positional_key` takes "name:VALUE" for "name:<positional_key>=VALUE".
  std::pair<const Entry*, SpecReader> parse(std::string_view text) const {
    const std::string name = Spec::name_of(text);
    if (name.empty()) Spec::parse(text, what_);  // throws the grammar's "empty name" error
    const Entry* entry = &at(name);
    std::string_view positional;
    if constexpr (requires { entry->positional_key; }) positional = entry->positional_key;
    return {entry, SpecReader(Spec::parse(text, what_, positional), what_)};
  }

 private:
  const Entry* find_locked(std::string_view name) const {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  std::vector<std::string> names_locked() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.name);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string known_locked() const {
    std::string known;
    for (const auto& n : names_locked()) known += (known.empty() ? "" : ", ") + n;
    return known.empty() ? "none" : known;
  }

  std::string what_;
  mutable std::mutex mu_;
  std::deque<Entry> entries_;
};

}  // namespace ferry
