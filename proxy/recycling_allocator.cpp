#include "proxy/recycling_allocator.hpp"

namespace sluice::proxy {

BlockCache::~BlockCache() {
  for (FreeBlock*& head : spare_) {
    while (head != nullptr) {
      FreeBlock* next = head->next;
      ::operator delete(head);
      head = next;
    }
  }
  gone_ = true;
}

}  // namespace sluice::proxy
