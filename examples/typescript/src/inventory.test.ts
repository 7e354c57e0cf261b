import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Inventory, OutOfStockError } from "./inventory";

describe("Inventory", () => {
  it("counts what was added and removed", () => {
    const inv = new Inventory();
    inv.add("apple", 5);
    inv.remove("apple", 2);
    assert.equal(inv.count("apple"), 3);
  });

  it("refuses to remove more than it has", () => {
    const inv = new Inventory();
    inv.add("pear", 1);
    assert.throws(() => inv.remove("pear", 2), OutOfStockError);
    assert.equal(inv.count("pear"), 1);
  });

  it("lists low stock by name", () => {
    const inv = new Inventory();
    inv.add("plum", 1);
    inv.add("fig", 0);
    inv.add("kiwi", 9);
    assert.deepEqual(inv.lowStock(2), ["fig", "plum"]);
  });
});
