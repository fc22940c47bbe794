mod m;
mod p;
mod q;
mod r;
mod s;
mod t;
mod u;
mod x;
