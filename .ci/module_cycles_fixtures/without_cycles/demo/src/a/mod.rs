// Declares its child without using it.
mod b;

pub struct Item;
