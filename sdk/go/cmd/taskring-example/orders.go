package main

import (
	"context"
	"errors"
	"log"
	"sync"
)

// orders stands in for the shop's order service.
type orders struct {
	mu        sync.Mutex
	paid      map[int64]bool
	cancelled map[int64]bool
}

var errNoSuchOrder = errors.New("no such order")

func newOrders() *orders {
	return &orders{paid: map[int64]bool{42: false, 7: true}, cancelled: map[int64]bool{}}
}

func (o *orders) IsPaid(_ context.Context, id int64) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	paid, ok := o.paid[id]
	if !ok {
		return false, errNoSuchOrder
	}
	return paid, nil
}

func (o *orders) Cancel(_ context.Context, id int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.cancelled[id] {
		o.cancelled[id] = true
		log.Printf("order %d cancelled: not paid in time", id)
	}
	return nil
}
